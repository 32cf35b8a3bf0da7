use axum::extract::State;
use axum::Json;
use paperclip_core::team::{DeploymentMode, Exposure};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(readiness))
        .routes(routes!(quiescence))
}

/// Whether the instance has its first administrator yet (always `ready` in
/// local trusted mode, which has none).
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum BootstrapStatus {
    Ready,
    BootstrapPending,
}

/// What the health check answers: everything to the board, the deployment
/// and bootstrap facts only to a caller not signed in to an authenticated
/// instance.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum HealthAnswer {
    Full(Health),
    Public(PublicHealth),
}

// Fields of both in name order: the JSON objects these replaced serialized
// their keys sorted.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    auth_ready: bool,
    bootstrap_invite_active: bool,
    bootstrap_status: BootstrapStatus,
    database: DatabaseInfo,
    #[schema(schema_with = exposure_schema)]
    deployment_exposure: Exposure,
    #[schema(schema_with = mode_schema)]
    deployment_mode: DeploymentMode,
    server_info: ServerInfoBody,
    server_version: &'static str,
    status: &'static str,
    version: &'static str,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicHealth {
    bootstrap_invite_active: bool,
    bootstrap_status: BootstrapStatus,
    #[schema(schema_with = exposure_schema)]
    deployment_exposure: Exposure,
    #[schema(schema_with = mode_schema)]
    deployment_mode: DeploymentMode,
    local_ai_login_supported: bool,
    status: &'static str,
}

/// The two deployment enums are core's, which derives no schema for them
/// (only these answers show them): a string of their values.
fn string_enum(values: impl IntoIterator<Item = &'static str>) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(values))
        .build()
}

fn mode_schema() -> utoipa::openapi::Object {
    string_enum(
        [DeploymentMode::LocalTrusted, DeploymentMode::Authenticated].map(DeploymentMode::as_str),
    )
}

fn exposure_schema() -> utoipa::openapi::Object {
    string_enum([Exposure::Private, Exposure::Public].map(Exposure::as_str))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DatabaseInfo {
    backend: &'static str,
    schema_version: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ServerInfoBody {
    process_started_at: String,
}

/// Liveness and deployment facts; answers as soon as the store is open. On an
/// authenticated instance a caller who is not signed in gets the deployment
/// and bootstrap facts only, as upstream does.
#[utoipa::path(get, path = "/api/health", tag = "health",
    responses((status = 200, description = "Healthy: everything to the board, the deployment facts only to a caller not signed in", body = HealthAnswer)))]
#[paperclip_macros::handler]
async fn health(
    State(app): State<AppState>,
    caller: Result<crate::auth::Caller, crate::error::ApiError>,
) -> Result<Json<HealthAnswer>, crate::error::ApiError> {
    let team = &app.security.team;
    let (bootstrap_status, invite_active) = if team.authenticated() {
        if paperclip_store::org::people::admin_exists(&app.store).await? {
            (BootstrapStatus::Ready, false)
        } else {
            let now = paperclip_store::now();
            let open = paperclip_store::org::members::bootstrap_open(&app.store, &now).await?;
            (BootstrapStatus::BootstrapPending, open)
        }
    } else {
        (BootstrapStatus::Ready, false)
    };
    if team.authenticated() && caller.is_err() {
        return Ok(Json(HealthAnswer::Public(PublicHealth {
            bootstrap_invite_active: invite_active,
            bootstrap_status,
            deployment_exposure: team.exposure,
            deployment_mode: team.mode,
            local_ai_login_supported: team.exposure == Exposure::Private,
            status: "ok",
        })));
    }
    Ok(Json(HealthAnswer::Full(Health {
        auth_ready: true,
        bootstrap_invite_active: invite_active,
        bootstrap_status,
        database: DatabaseInfo {
            backend: app.store.backend().as_str(),
            schema_version: paperclip_store::schema_version(),
        },
        deployment_exposure: team.exposure,
        deployment_mode: team.mode,
        server_info: ServerInfoBody {
            process_started_at: app.info.started_at.clone(),
        },
        server_version: app.info.version,
        status: "ok",
        version: app.info.version,
    })))
}

/// Whether this instance takes new work.
#[derive(Serialize, ToSchema)]
struct Readiness {
    /// `ok`, or `draining` while it finishes before a shutdown.
    status: &'static str,
}

/// Readiness for a load balancer or Kubernetes: 200 while the instance takes
/// new work, 503 from the moment it drains (SIGTERM with `--drain-seconds`),
/// so traffic moves to the other replicas while it still answers what it
/// was sent. No caller needed: it tells nothing about the instance's data.
/// Not upstream's (which has only `/api/health`); liveness stays there.
#[utoipa::path(get, path = "/api/health/ready", tag = "health",
    responses((status = 200, body = Readiness, description = "Taking new work"),
        (status = 503, body = Readiness, description = "Draining before a shutdown")))]
#[paperclip_macros::handler]
async fn readiness(State(app): State<AppState>) -> (axum::http::StatusCode, Json<Readiness>) {
    if app.lifecycle.is_draining() {
        (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(Readiness { status: "draining" }),
        )
    } else {
        (axum::http::StatusCode::OK, Json(Readiness { status: "ok" }))
    }
}

/// Whether the instance has come to rest: no run queued or running in the
/// store and no run process alive. What happens next then needs a new input
/// (a request, a timer, a routine tick), so a test can assert that something
/// did *not* happen without sleeping first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Quiescence {
    idle: bool,
    queued_runs: i64,
    running_runs: i64,
    live_processes: usize,
}

/// The instance's runs in flight; the local board or an instance administrator.
#[utoipa::path(get, path = "/api/instance/quiescence", tag = "health",
    responses((status = 200, body = Quiescence), (status = 403, description = "Not an instance administrator", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn quiescence(
    State(app): State<AppState>,
    caller: crate::auth::Caller,
) -> Result<Json<Quiescence>, crate::error::ApiError> {
    caller.require_instance_admin()?;
    // The live registry first: a run enters it before its row is claimed and
    // leaves it only after its row is final (and any follow-up is queued in
    // the same transaction), so reading in this order cannot miss a run.
    let live_processes = app.runtime.live_run_ids().len();
    let (queued_runs, running_runs) = paperclip_store::runs::in_flight(&app.store).await?;
    Ok(Json(Quiescence {
        idle: queued_runs == 0 && running_runs == 0 && live_processes == 0,
        queued_runs,
        running_runs,
        live_processes,
    }))
}
