use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::NewComment;
use paperclip_core::model::Comment;
use paperclip_store::thread::comments;
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_limit, QueryParams};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_comments, create_comment))
        .routes(routes!(get_comment, delete_comment))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Only comments created after this comment id.
    after: Option<String>,
    /// The same as `after` (upstream's other name for it).
    #[serde(rename = "afterCommentId")]
    after_comment_id: Option<String>,
    /// `desc` (newest first, the default, as upstream) or `asc`; with
    /// `after`, `asc` is the default: what is new, in order.
    order: Option<String>,
    limit: Option<String>,
}

#[utoipa::path(get, path = "/api/issues/{id}/comments", tag = "comments",
    params(("id" = String, Path), ListQuery), responses((status = 200, body = [Comment])))]
async fn list_comments(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> ApiResult<Json<Vec<Comment>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let after = query
        .after
        .as_deref()
        .or(query.after_comment_id.as_deref())
        .filter(|a| !a.trim().is_empty());
    let order = match query.order.as_deref() {
        None | Some("") if after.is_some() => comments::Order::Asc,
        None | Some("") | Some("desc") => comments::Order::Desc,
        Some("asc") => comments::Order::Asc,
        Some(other) => {
            return Err(ApiError::validation(json!([{
                "code": "invalid_value", "values": ["asc", "desc"], "path": ["order"],
                "message": format!("Invalid order {other:?}: expected asc or desc"),
            }])))
        }
    };
    let limit = parse_limit(query.limit.as_deref(), 1000, 1000)?;
    let list = comments::list(&app.store, &issue.id, after, order, limit).await?;
    Ok(Json(list))
}

/// Adds a comment. Agents @mentioned in it are woken, and so is the
/// issue's assignee when someone else wrote it.
#[utoipa::path(post, path = "/api/issues/{id}/comments", tag = "comments",
    params(("id" = String, Path)), request_body = NewComment,
    responses((status = 201, body = Comment), (status = 401, description = "Agent run id required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 409, description = "Another author already used this clientRequestId on the task", body = crate::error::ErrorBody)))]
async fn create_comment(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<NewComment>,
) -> ApiResult<(StatusCode, Json<Comment>)> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    let comment = comments::create(
        &app.store,
        actor,
        &issue.id,
        input.body,
        input.client_request_id,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(comment)))
}

#[utoipa::path(get, path = "/api/issues/{id}/comments/{commentId}", tag = "comments",
    params(("id" = String, Path), ("commentId" = String, Path)),
    responses((status = 200, body = Comment), (status = 404, description = "Comment not found", body = crate::error::ErrorBody)))]
async fn get_comment(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, comment_id)): Path<(String, String)>,
) -> ApiResult<Json<Comment>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(
        comments::get(&app.store, &issue.id, &comment_id).await?,
    ))
}

#[utoipa::path(delete, path = "/api/issues/{id}/comments/{commentId}", tag = "comments",
    params(("id" = String, Path), ("commentId" = String, Path)),
    responses((status = 200, body = Comment), (status = 404, description = "Comment not found", body = crate::error::ErrorBody)))]
async fn delete_comment(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, comment_id)): Path<(String, String)>,
) -> ApiResult<Json<Comment>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    Ok(Json(
        comments::delete(&app.store, actor, &issue.id, &comment_id).await?,
    ))
}
