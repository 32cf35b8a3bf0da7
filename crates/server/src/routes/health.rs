use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(quiescence))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    status: &'static str,
    version: &'static str,
    server_version: &'static str,
    deployment_mode: &'static str,
    deployment_exposure: &'static str,
    auth_ready: bool,
    bootstrap_status: &'static str,
    bootstrap_invite_active: bool,
    database: DatabaseInfo,
    server_info: ServerInfoBody,
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
#[utoipa::path(get, path = "/api/health", tag = "health", responses((status = 200, body = Health)))]
async fn health(
    State(app): State<AppState>,
    caller: Result<crate::auth::Caller, crate::error::ApiError>,
) -> Result<Json<serde_json::Value>, crate::error::ApiError> {
    let team = &app.security.team;
    let (bootstrap_status, invite_active) = if team.authenticated() {
        if paperclip_store::org::people::admin_exists(&app.store).await? {
            ("ready", false)
        } else {
            let now = paperclip_store::now();
            let open = paperclip_store::org::members::bootstrap_open(&app.store, &now).await?;
            ("bootstrap_pending", open)
        }
    } else {
        ("ready", false)
    };
    if team.authenticated() && caller.is_err() {
        return Ok(Json(serde_json::json!({
            "status": "ok",
            "deploymentMode": team.mode.as_str(),
            "deploymentExposure": team.exposure.as_str(),
            "localAiLoginSupported": team.exposure == paperclip_core::team::Exposure::Private,
            "bootstrapStatus": bootstrap_status,
            "bootstrapInviteActive": invite_active,
        })));
    }
    let body = Health {
        status: "ok",
        version: app.info.version,
        server_version: app.info.version,
        deployment_mode: team.mode.as_str(),
        deployment_exposure: team.exposure.as_str(),
        auth_ready: true,
        bootstrap_status,
        bootstrap_invite_active: invite_active,
        database: DatabaseInfo {
            backend: app.store.backend().as_str(),
            schema_version: paperclip_store::schema_version(),
        },
        server_info: ServerInfoBody {
            process_started_at: app.info.started_at.clone(),
        },
    };
    Ok(Json(serde_json::to_value(body).unwrap_or_default()))
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
