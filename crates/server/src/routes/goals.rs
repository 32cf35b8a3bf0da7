use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::{GoalPatch, NewGoal};
use paperclip_core::model::Goal;
use paperclip_store::org::goals;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_goals, create_goal))
        .routes(routes!(get_goal, update_goal, delete_goal))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/goals", tag = "goals",
    params(("companyId" = String, Path)), responses((status = 200, body = [Goal])))]
#[paperclip_macros::handler]
async fn list_goals(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Goal>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(goals::list(&app.store, &company_id).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/goals", tag = "goals",
    params(("companyId" = String, Path)), request_body = NewGoal, responses((status = 201, body = Goal)))]
#[paperclip_macros::handler]
async fn create_goal(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewGoal>,
) -> ApiResult<(StatusCode, Json<Goal>)> {
    caller.ensure_company(&company_id)?;
    Ok((
        StatusCode::CREATED,
        Json(goals::create(&app.store, caller.actor(), &company_id, input).await?),
    ))
}

#[utoipa::path(get, path = "/api/goals/{id}", tag = "goals",
    params(("id" = String, Path)), responses((status = 200, body = Goal), (status = 404, description = "Goal not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_goal(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Goal>> {
    Ok(Json(access::goal(&app, &caller, &id).await?))
}

#[utoipa::path(patch, path = "/api/goals/{id}", tag = "goals",
    params(("id" = String, Path)), request_body = GoalPatch, responses((status = 200, body = Goal)))]
#[paperclip_macros::handler]
async fn update_goal(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<GoalPatch>,
) -> ApiResult<Json<Goal>> {
    access::goal(&app, &caller, &id).await?;
    Ok(Json(
        goals::update(&app.store, caller.actor(), &id, patch).await?,
    ))
}

#[utoipa::path(delete, path = "/api/goals/{id}", tag = "goals",
    params(("id" = String, Path)), responses((status = 200, body = Goal), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_goal(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Goal>> {
    let actor = caller.require_board()?;
    Ok(Json(goals::delete(&app.store, actor, &id).await?))
}
