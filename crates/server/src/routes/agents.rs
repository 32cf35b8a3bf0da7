use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::{AgentPatch, NewAgent};
use paperclip_core::model::{Agent, OrgNode};
use paperclip_store::org::agent_levers::{self, Lever};
use paperclip_store::org::agents;
use serde_json::{json, Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::agent_view::{self, AgentView};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_agents, create_agent))
        .routes(routes!(get_agent, update_agent, delete_agent))
        .routes(routes!(update_permissions))
        .routes(routes!(pause_agent))
        .routes(routes!(resume_agent))
        .routes(routes!(terminate_agent))
        .routes(routes!(org_tree))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/agents", tag = "agents",
    params(("companyId" = String, Path)), responses((status = 200, body = [AgentView])))]
#[paperclip_macros::handler]
async fn list_agents(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<AgentView>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(agent_view::many(
        agents::list(&app.store, &company_id).await?,
    )))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/agents", tag = "agents",
    params(("companyId" = String, Path)), request_body = NewAgent,
    responses((status = 201, body = AgentView), (status = 404, description = "Company or manager not found", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid adapter config or prompt template", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewAgent>,
) -> ApiResult<(StatusCode, Json<AgentView>)> {
    let actor = caller.require_board()?;
    // An agent created with only a name is a draft: its config is checked
    // once one is given (and its first run says what is missing).
    if let Some(config) = &input.adapter_config {
        check_adapter_config(
            &app,
            input.adapter_type.as_deref().unwrap_or("process"),
            &Value::Object(config.clone()),
            config.keys(),
        )?;
    }
    let agent = agents::create(&app.store, actor, &company_id, input).await?;
    Ok((
        StatusCode::CREATED,
        Json(agent_view::one(&app, agent).await?),
    ))
}

#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = AgentView), (status = 404, description = "Agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentView>> {
    let agent = access::agent(&app, &caller, &id).await?;
    Ok(Json(agent_view::detail(&app, agent).await?))
}

#[utoipa::path(patch, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), request_body = AgentPatch,
    responses((status = 200, body = AgentView), (status = 422, description = "Reporting relationship would create cycle", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn update_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<AgentPatch>,
) -> ApiResult<Json<AgentView>> {
    let actor = caller.require_board()?;
    if patch.adapter_config.is_some() || patch.adapter_type.is_some() {
        let current = agents::get(&app.store, &id).await?;
        let adapter_type = patch
            .adapter_type
            .clone()
            .unwrap_or(current.adapter_type.clone());
        let config = match (
            &patch.adapter_config,
            patch.replace_adapter_config.unwrap_or(false),
        ) {
            (Some(new), true) => Value::Object(new.clone()),
            (Some(new), false) => agents::merge_config(&current.adapter_config, new.clone()),
            (None, _) => current.adapter_config.clone(),
        };
        // Keys are checked where they are set: a merge leaves an older
        // config's other keys alone, but a new type must know every key.
        let empty = Map::new();
        let set = if adapter_type != current.adapter_type {
            config.as_object().unwrap_or(&empty)
        } else {
            patch.adapter_config.as_ref().unwrap_or(&empty)
        };
        check_adapter_config(&app, &adapter_type, &config, set.keys())?;
    }
    let agent = agents::update(&app.store, actor, &id, patch).await?;
    Ok(Json(agent_view::one(&app, agent).await?))
}

/// Upstream's permissions body: both keys, as booleans.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Permissions {
    can_create_agents: bool,
    can_assign_tasks: bool,
}

/// Sets what the agent may do (board only); other permission keys are kept.
/// The change is a config revision like any other agent update.
#[utoipa::path(patch, path = "/api/agents/{id}/permissions", tag = "agents",
    params(("id" = String, Path)), request_body = Permissions,
    responses((status = 200, body = AgentView), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn update_permissions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Permissions>,
) -> ApiResult<Json<AgentView>> {
    let actor = caller.require_board()?;
    access::agent(&app, &caller, &id).await?;
    let mut permissions = serde_json::Map::new();
    permissions.insert("canCreateAgents".into(), body.can_create_agents.into());
    permissions.insert("canAssignTasks".into(), body.can_assign_tasks.into());
    let patch = AgentPatch {
        permissions: Some(permissions),
        ..AgentPatch::default()
    };
    let agent = agents::update(&app.store, actor, &id, patch).await?;
    // Upstream answers with the agent's own read: what it may now do.
    Ok(Json(agent_view::detail(&app, agent).await?))
}

#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent), (status = 404, description = "Agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    app.runtime.stop_agent(actor, &id, "agent deleted").await?;
    Ok(Json(agent_levers::delete(&app.store, actor, &id).await?))
}

/// Pauses the agent: its queued runs are cancelled and a running run is
/// stopped (TERM, then KILL after the adapter's grace).
#[utoipa::path(post, path = "/api/agents/{id}/pause", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = AgentView), (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 409, description = "Agent is terminated", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn pause_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentView>> {
    let actor = caller.require_board()?;
    let agent = agent_levers::pull_lever(&app.store, actor, &id, Lever::Pause).await?;
    app.runtime.stop_agent(actor, &id, "agent paused").await?;
    let agent = agents::get(&app.store, &agent.id).await?;
    Ok(Json(agent_view::one(&app, agent).await?))
}

#[utoipa::path(post, path = "/api/agents/{id}/resume", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = AgentView), (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 409, description = "Cannot resume terminated agent", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn resume_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentView>> {
    let actor = caller.require_board()?;
    let agent = agent_levers::pull_lever(&app.store, actor, &id, Lever::Resume).await?;
    Ok(Json(agent_view::one(&app, agent).await?))
}

/// Terminates the agent for good and stops whatever it was running.
#[utoipa::path(post, path = "/api/agents/{id}/terminate", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = AgentView)))]
#[paperclip_macros::handler]
async fn terminate_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentView>> {
    let actor = caller.require_board()?;
    let agent = agent_levers::pull_lever(&app.store, actor, &id, Lever::Terminate).await?;
    app.runtime
        .stop_agent(actor, &id, "agent terminated")
        .await?;
    let agent = agents::get(&app.store, &agent.id).await?;
    Ok(Json(agent_view::one(&app, agent).await?))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/org", tag = "agents",
    params(("companyId" = String, Path)), responses((status = 200, body = [OrgNode])))]
#[paperclip_macros::handler]
async fn org_tree(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<OrgNode>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(agents::org_tree(&app.store, &company_id).await?))
}

/// Known adapters check their config when it is saved, so a broken agent is
/// refused now rather than failing at its first heartbeat: its values, and
/// that the adapter knows each of the top-level keys being `set` (a key it
/// neither reads nor accepts from upstream would do nothing). Unknown
/// adapter types (upstream has many) are stored as opaque JSON.
pub(crate) fn check_adapter_config<'k>(
    app: &AppState,
    adapter_type: &str,
    config: &Value,
    set: impl IntoIterator<Item = &'k String>,
) -> ApiResult<()> {
    if let Some(template) = config.get("promptTemplate").and_then(Value::as_str) {
        if let Err(err) = paperclip_core::template::variables(template) {
            return Err(
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, err.to_string()).with_details(
                    json!([{
                        "path": ["adapterConfig", "promptTemplate"],
                        "message": err.to_string(),
                        "allowed": paperclip_core::template::CATALOG,
                    }]),
                ),
            );
        }
    }
    let Some(adapter) = app.runtime.adapter(adapter_type) else {
        return Ok(());
    };
    let mut errors = adapter.validate_config(config).err().unwrap_or_default();
    // A key refused for its value already says why (e.g. confinement on a
    // Kubernetes agent); it is not named twice.
    let unknown: Vec<_> = adapter
        .known_keys()
        .check(adapter_type, set.into_iter().map(String::as_str))
        .err()
        .unwrap_or_default()
        .into_iter()
        .filter(|u| !errors.iter().any(|e| e.path.first() == u.path.first()))
        .collect();
    if errors.is_empty() && unknown.is_empty() {
        return Ok(());
    }
    let message = if unknown.is_empty() {
        "Invalid adapter config".to_string()
    } else {
        let names: Vec<&str> = unknown.iter().map(|u| u.path[0].as_str()).collect();
        format!(
            "Invalid adapter config: unknown key{} for {adapter_type}: {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        )
    };
    let unknown_at = errors.len();
    errors.extend(unknown);
    let details: Vec<Value> = errors
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let mut path = vec![Value::from("adapterConfig")];
            path.extend(e.path.iter().cloned().map(Value::from));
            if i >= unknown_at {
                // zod's code for a key a strict object does not define.
                json!({ "code": "unrecognized_keys", "path": path, "message": e.message })
            } else {
                json!({ "path": path, "message": e.message })
            }
        })
        .collect();
    Err(ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
        .with_details(Value::Array(details)))
}
