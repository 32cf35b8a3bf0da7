use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::DocumentPut;
use paperclip_core::model::{Document, DocumentRevision};
use paperclip_store::thread::documents;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_documents))
        .routes(routes!(get_document, put_document, delete_document))
        .routes(routes!(list_revisions))
        .routes(routes!(restore_revision))
        .routes(routes!(lock_document))
        .routes(routes!(unlock_document))
}

#[utoipa::path(get, path = "/api/issues/{id}/documents", tag = "documents",
    params(("id" = String, Path)), responses((status = 200, body = [Document])))]
#[paperclip_macros::handler]
async fn list_documents(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Document>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(documents::list(&app.store, &issue.id).await?))
}

#[utoipa::path(get, path = "/api/issues/{id}/documents/{key}", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = Document), (status = 404, description = "Document not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_document(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Document>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(documents::get(&app.store, &issue.id, &key).await?))
}

/// Creates the document (201) or adds a revision to it (200).
#[utoipa::path(put, path = "/api/issues/{id}/documents/{key}", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)), request_body = DocumentPut,
    responses((status = 201, body = Document), (status = 200, body = Document),
        (status = 409, description = "baseRevisionId is not the latest revision, or another run holds the issue", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn put_document(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
    ValidJson(input): ValidJson<DocumentPut>,
) -> ApiResult<(StatusCode, Json<Document>)> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    let written = documents::put(&app.store, actor, &issue.id, &key, input).await?;
    let status = if written.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(written.document)))
}

#[utoipa::path(delete, path = "/api/issues/{id}/documents/{key}", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = Document), (status = 404, description = "Document not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_document(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Document>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    Ok(Json(
        documents::delete(&app.store, actor, &issue.id, &key).await?,
    ))
}

#[utoipa::path(get, path = "/api/issues/{id}/documents/{key}/revisions", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = [DocumentRevision])))]
#[paperclip_macros::handler]
async fn list_revisions(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Vec<DocumentRevision>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(
        documents::revisions(&app.store, &issue.id, &key).await?,
    ))
}

/// Makes an old revision current again, as a new revision (upstream's route).
#[utoipa::path(post, path = "/api/issues/{id}/documents/{key}/revisions/{revisionId}/restore", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path), ("revisionId" = String, Path)),
    responses((status = 200, body = Document), (status = 404, description = "Document or revision not found", body = crate::error::ErrorBody),
        (status = 409, description = "Another run holds the issue", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn restore_revision(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key, revision_id)): Path<(String, String, String)>,
) -> ApiResult<Json<Document>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    Ok(Json(
        documents::restore(&app.store, actor, &issue.id, &key, &revision_id).await?,
    ))
}

/// Locks the document (board only): every write, restore or delete is
/// refused with 409 until it is unlocked. Locking a locked one changes nothing.
#[utoipa::path(post, path = "/api/issues/{id}/documents/{key}/lock", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = Document), (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Document not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn lock_document(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Document>> {
    set_lock(&app, &caller, &id, &key, true).await
}

#[utoipa::path(post, path = "/api/issues/{id}/documents/{key}/unlock", tag = "documents",
    params(("id" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = Document), (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Document not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn unlock_document(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key)): Path<(String, String)>,
) -> ApiResult<Json<Document>> {
    set_lock(&app, &caller, &id, &key, false).await
}

async fn set_lock(
    app: &AppState,
    caller: &Caller,
    id: &str,
    key: &str,
    lock: bool,
) -> ApiResult<Json<Document>> {
    let issue = access::issue(app, caller, id).await?;
    let actor = caller.require_board()?;
    Ok(Json(
        documents::set_lock(&app.store, actor, &issue.id, key, lock).await?,
    ))
}
