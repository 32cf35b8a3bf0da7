use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::agent::{AgentRole, AgentStatus};
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::model::{Agent, ConfigRevision};
use paperclip_store::audit::revisions;
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
        .routes(routes!(company_configurations))
}

/// Every change to the agent's adapter or runtime config, newest first.
#[utoipa::path(get, path = "/api/agents/{id}/config-revisions", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = [ConfigRevision])))]
#[paperclip_macros::handler]
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
#[paperclip_macros::handler]
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
    responses((status = 200, body = crate::agent_view::AgentView), (status = 422, description = "Redacted values cannot be restored")))]
#[paperclip_macros::handler]
async fn rollback(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, revision_id)): Path<(String, String)>,
) -> ApiResult<Json<crate::agent_view::AgentView>> {
    let actor = caller.require_board()?;
    let agent =
        paperclip_store::org::agent_levers::rollback(&app.store, actor, &id, &revision_id).await?;
    Ok(Json(crate::agent_view::one(&app, agent).await?))
}

/// An agent's configuration as anyone with read access may see it: secret
/// values are shown as `[REDACTED]` (upstream's redacted configuration).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// The agent's id (upstream's key).
    id: String,
    company_id: String,
    name: String,
    role: AgentRole,
    title: Option<String>,
    status: AgentStatus,
    reports_to: Option<String>,
    adapter_type: String,
    #[schema(value_type = Object)]
    adapter_config: Value,
    #[schema(value_type = Object)]
    runtime_config: Value,
    #[schema(value_type = Object)]
    permissions: Value,
    updated_at: String,
    /// The heartbeat policy in force, with defaults and clamps applied.
    #[schema(value_type = Object)]
    heartbeat: Value,
}

impl Configuration {
    fn of(agent: Agent) -> Configuration {
        let agent = crate::agent_view::with_defaults(agent);
        let policy = HeartbeatPolicy::from_runtime_config(&agent.runtime_config);
        Configuration {
            adapter_config: agent.redacted_config(),
            runtime_config: agent.redacted_runtime_config(),
            id: agent.id,
            company_id: agent.company_id,
            name: agent.name,
            role: agent.role,
            title: agent.title,
            status: agent.status,
            reports_to: agent.reports_to,
            adapter_type: agent.adapter_type,
            permissions: agent.permissions,
            updated_at: agent.updated_at,
            heartbeat: serde_json::json!({
                "enabled": policy.enabled,
                "intervalSec": policy.interval_sec,
                "wakeOnAssignment": policy.wake_on_assignment,
                "wakeOnOnDemand": policy.wake_on_on_demand,
                "wakeOnAutomation": policy.wake_on_automation,
                "cooldownSec": policy.cooldown_sec,
                "maxConcurrentRuns": policy.max_concurrent_runs,
            }),
        }
    }
}

/// One agent's configuration, with the revision that made it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfiguration {
    #[serde(flatten)]
    configuration: Configuration,
    latest_revision: Option<ConfigRevision>,
}

#[utoipa::path(get, path = "/api/agents/{id}/configuration", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = AgentConfiguration)))]
#[paperclip_macros::handler]
async fn configuration(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentConfiguration>> {
    let agent = access::agent(&app, &caller, &id).await?;
    let latest = revisions::latest(&app.store, &id).await?;
    Ok(Json(AgentConfiguration {
        configuration: Configuration::of(agent),
        latest_revision: latest,
    }))
}

/// Every agent's configuration in the company, redacted (upstream's route).
#[utoipa::path(get, path = "/api/companies/{companyId}/agent-configurations", tag = "agents",
    params(("companyId" = String, Path)), responses((status = 200, body = [Configuration])))]
#[paperclip_macros::handler]
async fn company_configurations(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Configuration>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let agents = paperclip_store::org::agents::list(&app.store, &company_id).await?;
    Ok(Json(agents.into_iter().map(Configuration::of).collect()))
}
