use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
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

/// Liveness and deployment facts; answers as soon as the store is open.
#[utoipa::path(get, path = "/api/health", tag = "health", responses((status = 200, body = Health)))]
async fn health(State(app): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok",
        version: app.info.version,
        server_version: app.info.version,
        deployment_mode: "local_trusted",
        deployment_exposure: "private",
        auth_ready: true,
        bootstrap_status: "ready",
        database: DatabaseInfo {
            backend: app.store.backend().as_str(),
            schema_version: paperclip_store::schema_version(),
        },
        server_info: ServerInfoBody {
            process_started_at: app.info.started_at.clone(),
        },
    })
}
