use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::input::NewComment;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Comment;
use paperclip_store::thread::comments;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
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
#[paperclip_macros::handler]
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

/// The comment, and what it did to a closed task.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostedComment {
    #[serde(flatten)]
    comment: Comment,
    /// The comment reopened its done or cancelled task (to `todo`).
    reopened: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reopened_from: Option<IssueStatus>,
    /// Agents it would have woken, had the task not stayed closed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_woken: Vec<NotWoken>,
}

/// An agent a comment did not wake, and why.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotWoken {
    agent_id: String,
    agent_name: String,
    /// `issue_closed`.
    reason: String,
    message: String,
}

impl From<paperclip_store::issues::NotWoken> for NotWoken {
    fn from(n: paperclip_store::issues::NotWoken) -> NotWoken {
        NotWoken {
            agent_id: n.agent_id,
            agent_name: n.agent_name,
            reason: n.reason.to_string(),
            message: n.message,
        }
    }
}

/// Adds a comment. Agents @mentioned in it are woken, and so is the
/// issue's assignee when someone else wrote it. On a done or cancelled
/// task, a person's comment reopens work an agent owns (to `todo`, its
/// assignee woken once); `reopen` (or upstream's `resume`) decides it
/// explicitly. A task that stays closed wakes nobody: `notWoken` says whom
/// and why. People may add a `presentation` and `metadata` (agents: 403);
/// whom an agent writes for comes from its credential, never the body.
#[utoipa::path(post, path = "/api/issues/{id}/comments", tag = "comments",
    params(("id" = String, Path)), request_body = NewComment,
    responses((status = 201, body = PostedComment), (status = 401, description = "Agent run id required", body = crate::error::ErrorBody),
        (status = 400, description = "A presentation or metadata not in the original's shape", body = crate::error::ErrorBody),
        (status = 403, description = "An agent asked to reopen another agent's task, sent a presentation or metadata, or named whom it writes for", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 409, description = "Another author already used this clientRequestId on the task, or an agent asked to reopen its cancelled task", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_comment(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<NewComment>,
) -> ApiResult<(StatusCode, Json<PostedComment>)> {
    let extras = shapes(&input)?;
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    let extras = permit(&caller, &input, extras)?;
    super::chats::check_message(&caller, &issue, input.client_request_id.as_deref())?;
    let reopen = match (input.reopen, input.resume) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (asked, _) => asked,
    };
    let posted = comments::post(
        &app.store,
        actor,
        &issue.id,
        input.body,
        input.client_request_id,
        reopen,
        &extras,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(PostedComment {
            comment: posted.comment,
            reopened: posted.reopened_from.is_some(),
            reopened_from: posted.reopened_from,
            not_woken: posted.not_woken.into_iter().map(NotWoken::from).collect(),
        }),
    ))
}

/// The structured fields, checked as the original checks them (400 naming
/// the field) before anything else is.
fn shapes(input: &NewComment) -> ApiResult<comments::Extras> {
    let shape = |i: paperclip_core::comment::ShapeIssue| ApiError::validation(json!([i.to_json()]));
    let presentation = match input.presentation.clone().flatten() {
        Some(mut p) => Some(p.normalize().map(|()| p).map_err(shape)?),
        None => None,
    };
    let metadata = match input.metadata.clone().flatten() {
        Some(mut m) => Some(m.normalize().map(|()| m).map_err(shape)?),
        None => None,
    };
    if input
        .on_behalf_of_user_id
        .as_deref()
        .is_some_and(|u| u.trim().is_empty())
    {
        return Err(ApiError::validation(json!([{
            "code": "too_small", "path": ["onBehalfOfUserId"],
            "message": "onBehalfOfUserId must not be empty",
        }])));
    }
    Ok(comments::Extras {
        presentation,
        metadata,
        on_behalf_of: None,
    })
}

/// Who may send what: the structured fields are the board's, and whom an
/// agent acts for is its credential's to say (403, as upstream).
fn permit(
    caller: &Caller,
    input: &NewComment,
    extras: comments::Extras,
) -> ApiResult<comments::Extras> {
    if caller.agent_id().is_some() {
        if input.on_behalf_of_user_id.is_some() {
            return Err(ApiError::forbidden(
                "An agent cannot say whom it writes for: that comes from its credential",
            )
            .with_details(json!({
                "code": "issue_write_attribution_spoof_rejected",
                "field": "onBehalfOfUserId",
            })));
        }
        let fields: Vec<&str> = [
            input.presentation.is_some().then_some("presentation"),
            input.metadata.is_some().then_some("metadata"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !fields.is_empty() {
            return Err(ApiError::forbidden(
                "Only board users may set a comment's presentation or metadata",
            )
            .with_details(json!({ "fields": fields })));
        }
    }
    Ok(comments::Extras {
        on_behalf_of: caller.on_behalf_of().map(str::to_string),
        ..extras
    })
}

#[utoipa::path(get, path = "/api/issues/{id}/comments/{commentId}", tag = "comments",
    params(("id" = String, Path), ("commentId" = String, Path)),
    responses((status = 200, body = Comment), (status = 404, description = "Comment not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
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

/// Deletes a comment: it is kept, hidden from reads, with who deleted it
/// (`deletedByType`, the agent or person, and the run they acted in); the
/// answer is the deleted comment.
#[utoipa::path(delete, path = "/api/issues/{id}/comments/{commentId}", tag = "comments",
    params(("id" = String, Path), ("commentId" = String, Path)),
    responses((status = 200, body = Comment), (status = 404, description = "Comment not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
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
