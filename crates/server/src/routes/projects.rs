use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::{NewProject, ProjectPatch};
use paperclip_core::model::Project;
use paperclip_store::org::projects;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_projects, create_project))
        .routes(routes!(get_project, update_project, delete_project))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/projects", tag = "projects",
    params(("companyId" = String, Path)), responses((status = 200, body = [Project])))]
#[paperclip_macros::handler]
async fn list_projects(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Project>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(projects::list(&app.store, &company_id).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/projects", tag = "projects",
    params(("companyId" = String, Path)), request_body = NewProject, responses((status = 201, body = Project)))]
#[paperclip_macros::handler]
async fn create_project(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewProject>,
) -> ApiResult<(StatusCode, Json<Project>)> {
    caller.ensure_company(&company_id)?;
    Ok((
        StatusCode::CREATED,
        Json(projects::create(&app.store, caller.actor(), &company_id, input).await?),
    ))
}

#[utoipa::path(get, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path)), responses((status = 200, body = Project), (status = 404, description = "Project not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_project(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Project>> {
    Ok(Json(access::project(&app, &caller, &id).await?))
}

#[utoipa::path(patch, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path)), request_body = ProjectPatch, responses((status = 200, body = Project)))]
#[paperclip_macros::handler]
async fn update_project(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<ProjectPatch>,
) -> ApiResult<Json<Project>> {
    access::project(&app, &caller, &id).await?;
    Ok(Json(
        projects::update(&app.store, caller.actor(), &id, patch).await?,
    ))
}

#[utoipa::path(delete, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path)), responses((status = 200, body = Project), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_project(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Project>> {
    let actor = caller.require_board()?;
    Ok(Json(projects::delete(&app.store, actor, &id).await?))
}
