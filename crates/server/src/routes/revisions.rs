use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::model::{Agent, ConfigRevision};
use paperclip_store::revisions;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_revisions))
        .routes(routes!(get_revision))
        .routes(routes!(rollback))
        .routes(routes!(configuration))
}

/// Every change to the agent's adapter or runtime config, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/config-revisions", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = [ConfigRevision])))]
async fn list_revisions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ConfigRevision>>> {
    access::agent(&app, &caller, &id).await?;
    Ok(Json(revisions::list(&app.store, &id).await?))
}

#[utoipa::path(get, path = "/api/agents/{id}/config-revisions/{revisionId}", tag = "agents",
    params(("id" = String, Path), ("revisionId" = String, Path)), responses((status = 200, body = ConfigRevision)))]
async fn get_revision(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, revision_id)): Path<(String, String)>,
) -> ApiResult<Json<ConfigRevision>> {
    access::agent(&app, &caller, &id).await?;
    Ok(Json(revisions::get(&app.store, &id, &revision_id).await?))
}

/// Restores a revision's config (board only). Redacted secrets keep their
/// current values; a revision whose secret the agent no longer has is refused (422).
#[utoipa::path(post, path = "/api/agents/{id}/config-revisions/{revisionId}/rollback", tag = "agents",
    params(("id" = String, Path), ("revisionId" = String, Path)),
    responses((status = 200, body = Agent), (status = 422, description = "Redacted values cannot be restored")))]
async fn rollback(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, revision_id)): Path<(String, String)>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(
        revisions::rollback(&app.store, actor, &id, &revision_id).await?,
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// The agent's id (upstream's key).
    id: String,
    company_id: String,
    name: String,
    adapter_type: String,
    /// Secret values are shown as `[REDACTED]`.
    #[schema(value_type = Object)]
    adapter_config: Value,
    #[schema(value_type = Object)]
    runtime_config: Value,
    /// The heartbeat policy in force, with defaults and clamps applied.
    #[schema(value_type = Object)]
    heartbeat: Value,
    latest_revision: Option<ConfigRevision>,
}

#[utoipa::path(get, path = "/api/agents/{id}/configuration", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Configuration)))]
async fn configuration(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Configuration>> {
    let agent = access::agent(&app, &caller, &id).await?;
    let policy = HeartbeatPolicy::from_runtime_config(&agent.runtime_config);
    let latest = revisions::list(&app.store, &id).await?.into_iter().next();
    Ok(Json(Configuration {
        adapter_config: agent.redacted_config(),
        runtime_config: agent.redacted_runtime_config(),
        id: agent.id,
        company_id: agent.company_id,
        name: agent.name,
        adapter_type: agent.adapter_type,
        heartbeat: serde_json::json!({
            "enabled": policy.enabled,
            "intervalSec": policy.interval_sec,
            "wakeOnAssignment": policy.wake_on_assignment,
            "wakeOnOnDemand": policy.wake_on_on_demand,
            "wakeOnAutomation": policy.wake_on_automation,
            "cooldownSec": policy.cooldown_sec,
            "maxConcurrentRuns": policy.max_concurrent_runs,
        }),
        latest_revision: latest,
    }))
}
