use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::NewLabel;
use paperclip_core::model::Label;
use paperclip_store::issues::labels;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_labels, create_label))
        .routes(routes!(delete_label))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/labels", tag = "labels",
    params(("companyId" = String, Path)), responses((status = 200, body = [Label])))]
#[paperclip_macros::handler]
async fn list_labels(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Label>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(labels::list(&app.store, &company_id).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/labels", tag = "labels",
    params(("companyId" = String, Path)), request_body = NewLabel,
    responses((status = 201, body = Label), (status = 409, description = "Label already exists", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_label(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewLabel>,
) -> ApiResult<(StatusCode, Json<Label>)> {
    caller.ensure_company(&company_id)?;
    Ok((
        StatusCode::CREATED,
        Json(labels::create(&app.store, caller.actor(), &company_id, input).await?),
    ))
}

#[utoipa::path(delete, path = "/api/labels/{labelId}", tag = "labels",
    params(("labelId" = String, Path)), responses((status = 200, body = Label), (status = 404, description = "Label not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_label(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Label>> {
    let actor = caller.require_board()?;
    Ok(Json(labels::delete(&app.store, actor, &id).await?))
}
