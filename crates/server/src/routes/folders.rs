//! Routine folders (upstream's `/api/companies/:id/folders`): the company's
//! tree of folders for its routines, and filing a routine into one. Reading
//! needs the company; every change needs `tasks:mutate` (the route table),
//! as changing the routines themselves does. Filing is not managing: as in
//! the original, any agent of the company may file any of its routines
//! (changing one stays its assignee's). Upstream's `skill` folders
//! (and its personal skill folder, `folders/ensure-my`) are not
//! implemented here.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::folder::{
    Folder, FolderKind, FolderList, FolderMove, FolderPatch, ItemMove, ItemMoved, NewFolder,
};
use paperclip_store::routines::folders;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_folders, create_folder))
        .routes(routes!(update_folder, delete_folder))
        .routes(routes!(move_folder))
        .routes(routes!(move_item))
}

#[derive(Deserialize, utoipa::IntoParams)]
struct KindQuery {
    kind: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/folders", tag = "folders",
    params(("companyId" = String, Path), KindQuery),
    responses((status = 200, body = FolderList), (status = 400, description = "No kind")))]
#[paperclip_macros::handler]
async fn list_folders(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    Query(q): Query<KindQuery>,
) -> ApiResult<Json<FolderList>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let kind = q
        .kind
        .and_then(|k| serde_json::from_value::<FolderKind>(serde_json::Value::String(k)).ok())
        .ok_or_else(|| {
            ApiError::validation(serde_json::json!([{
                "code": "invalid_enum_value", "path": ["kind"],
                "message": "Folder kind query parameter is required (routine or skill)",
            }]))
        })?;
    Ok(Json(folders::list(&app.store, &company_id, kind).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/folders", tag = "folders",
    params(("companyId" = String, Path)), request_body = NewFolder,
    responses((status = 201, body = Folder), (status = 409, description = "Slug taken")))]
#[paperclip_macros::handler]
async fn create_folder(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<NewFolder>,
) -> ApiResult<(StatusCode, Json<Folder>)> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let folder = folders::create(&app.store, caller.actor(), &company_id, &input).await?;
    Ok((StatusCode::CREATED, Json(folder)))
}

#[utoipa::path(patch, path = "/api/companies/{companyId}/folders/{folderId}", tag = "folders",
    params(("companyId" = String, Path), ("folderId" = String, Path)), request_body = FolderPatch,
    responses((status = 200, body = Folder), (status = 404, description = "Not found")))]
#[paperclip_macros::handler]
async fn update_folder(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, folder_id)): Path<(String, String)>,
    JsonBody(patch): JsonBody<FolderPatch>,
) -> ApiResult<Json<Folder>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let folder =
        folders::update(&app.store, caller.actor(), &company_id, &folder_id, &patch).await?;
    Ok(Json(folder))
}

/// What a deletion answers: the folder as it was.
#[derive(Serialize, ToSchema)]
struct Deleted {
    deleted: Folder,
}

#[utoipa::path(delete, path = "/api/companies/{companyId}/folders/{folderId}", tag = "folders",
    params(("companyId" = String, Path), ("folderId" = String, Path)),
    responses((status = 200, body = Deleted), (status = 409, description = "Has folders under it")))]
#[paperclip_macros::handler]
async fn delete_folder(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, folder_id)): Path<(String, String)>,
) -> ApiResult<Json<Deleted>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let deleted = folders::delete(&app.store, caller.actor(), &company_id, &folder_id).await?;
    Ok(Json(Deleted { deleted }))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/folders/{folderId}/move",
    tag = "folders", params(("companyId" = String, Path), ("folderId" = String, Path)),
    request_body = FolderMove,
    responses((status = 200, body = Folder), (status = 422, description = "A cycle or too deep")))]
#[paperclip_macros::handler]
async fn move_folder(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, folder_id)): Path<(String, String)>,
    JsonBody(input): JsonBody<FolderMove>,
) -> ApiResult<Json<Folder>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let folder =
        folders::move_folder(&app.store, caller.actor(), &company_id, &folder_id, &input).await?;
    Ok(Json(folder))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/folders/items/move", tag = "folders",
    params(("companyId" = String, Path)), request_body = ItemMove,
    responses((status = 200, body = ItemMoved), (status = 404, description = "No such folder or routine")))]
#[paperclip_macros::handler]
async fn move_item(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<ItemMove>,
) -> ApiResult<Json<ItemMoved>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let moved = folders::move_item(&app.store, caller.actor(), &company_id, &input).await?;
    Ok(Json(moved))
}
