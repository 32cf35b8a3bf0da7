use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::{AgentPatch, NewAgent};
use paperclip_core::model::{Agent, OrgNode};
use paperclip_store::agents::{self, Lever};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::companies::require_company;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_agents, create_agent))
        .routes(routes!(get_agent, update_agent, delete_agent))
        .routes(routes!(pause_agent))
        .routes(routes!(resume_agent))
        .routes(routes!(terminate_agent))
        .routes(routes!(org_tree))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/agents", tag = "agents",
    params(("companyId" = String, Path)), responses((status = 200, body = [Agent])))]
async fn list_agents(
    State(app): State<AppState>,
    _caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Agent>>> {
    require_company(&app, &company_id).await?;
    Ok(Json(agents::list(&app.store, &company_id).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/agents", tag = "agents",
    params(("companyId" = String, Path)), request_body = NewAgent,
    responses((status = 201, body = Agent), (status = 404, description = "Company or manager not found")))]
async fn create_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<NewAgent>,
) -> ApiResult<(StatusCode, Json<Agent>)> {
    let actor = caller.require_board()?;
    Ok((
        StatusCode::CREATED,
        Json(agents::create(&app.store, actor, &company_id, input).await?),
    ))
}

#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent), (status = 404, description = "Agent not found")))]
async fn get_agent(
    State(app): State<AppState>,
    _caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    Ok(Json(agents::get(&app.store, &id).await?))
}

#[utoipa::path(patch, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), request_body = AgentPatch,
    responses((status = 200, body = Agent), (status = 422, description = "Reporting relationship would create cycle")))]
async fn update_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(patch): JsonBody<AgentPatch>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(agents::update(&app.store, actor, &id, patch).await?))
}

#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent), (status = 404, description = "Agent not found")))]
async fn delete_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(agents::delete(&app.store, actor, &id).await?))
}

#[utoipa::path(post, path = "/api/agents/{id}/pause", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent), (status = 409, description = "Agent is terminated")))]
async fn pause_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(
        agents::pull_lever(&app.store, actor, &id, Lever::Pause).await?,
    ))
}

#[utoipa::path(post, path = "/api/agents/{id}/resume", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent), (status = 409, description = "Cannot resume terminated agent")))]
async fn resume_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(
        agents::pull_lever(&app.store, actor, &id, Lever::Resume).await?,
    ))
}

#[utoipa::path(post, path = "/api/agents/{id}/terminate", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Agent)))]
async fn terminate_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Agent>> {
    let actor = caller.require_board()?;
    Ok(Json(
        agents::pull_lever(&app.store, actor, &id, Lever::Terminate).await?,
    ))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/org", tag = "agents",
    params(("companyId" = String, Path)), responses((status = 200, body = [OrgNode])))]
async fn org_tree(
    State(app): State<AppState>,
    _caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<OrgNode>>> {
    require_company(&app, &company_id).await?;
    Ok(Json(agents::org_tree(&app.store, &company_id).await?))
}
