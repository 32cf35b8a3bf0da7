//! A person's own inbox state of a task, on upstream's routes: read marks
//! (`/issues/{id}/read`, the board's), archiving from "Mine"
//! (`/issues/{id}/inbox-archive`, the board's or an agent's on a person's
//! behalf, with its run id) and an agent's view of a person's "Mine" inbox
//! (`/agents/me/inbox/mine`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use paperclip_store::issues::inbox_state::{self, Archive, ArchivedBy, ReadState};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mark_read, mark_unread))
        .routes(routes!(archive, unarchive))
        .routes(routes!(mine))
}

/// Read marks belong to a board person.
fn board_user(caller: &Caller) -> ApiResult<String> {
    match caller.actor().user_id() {
        Some(id) => Ok(id.to_string()),
        None => Err(ApiError::forbidden("Board authentication required")),
    }
}

/// Marks the task read by the calling board person now.
#[utoipa::path(post, path = "/api/issues/{id}/read", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = ReadState),
        (status = 403, description = "Board authentication required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn mark_read(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ReadState>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let user = board_user(&caller)?;
    let state = inbox_state::mark_read(
        &app.store,
        caller.actor(),
        &issue.company_id,
        &issue.id,
        &user,
    )
    .await?;
    Ok(Json(state))
}

/// Marks the task unread again for the calling board person.
#[utoipa::path(delete, path = "/api/issues/{id}/read", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 403, description = "Board authentication required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn mark_unread(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let user = board_user(&caller)?;
    let removed = inbox_state::mark_unread(
        &app.store,
        caller.actor(),
        &issue.company_id,
        &issue.id,
        &user,
    )
    .await?;
    Ok(Json(json!({ "id": issue.id, "removed": removed })))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ArchiveBody {
    /// The person whose inbox; an agent omits it for the task's responsible person.
    user_id: Option<String>,
}

/// The body is optional (upstream's agents send none); when given it is strict.
fn archive_body(bytes: &[u8]) -> ApiResult<ArchiveBody> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(ArchiveBody::default());
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::validation(
            json!([{ "code": "invalid_body", "path": [], "message": e.to_string() }]),
        )
    })
}

fn denied(message: &str, code: &str) -> ApiError {
    ApiError::forbidden(message).with_details(json!({ "code": code }))
}

/// Whose inbox an archive touches: the board person's own, or for an agent
/// (in one of its runs) the task's responsible person: who created it, else
/// the person it is assigned to. An agent may not name anyone else: no
/// person here has opted other agents into managing their inbox.
fn archive_target(caller: &Caller, issue: &Issue, body: &ArchiveBody) -> ApiResult<String> {
    if let Some(user) = caller.actor().user_id() {
        return Ok(user.to_string());
    }
    caller.require_run()?;
    let responsible = issue
        .created_by_user_id
        .clone()
        .or_else(|| issue.assignee_user_id.clone());
    let explicit = body
        .user_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    match (explicit, responsible) {
        (None, Some(user)) => Ok(user),
        (None, None) => Err(denied(
            "Inbox target user could not be resolved",
            "inbox_target_user_unresolved",
        )),
        (Some(named), Some(user)) if named == user => Ok(user),
        (Some(_), _) => Err(denied(
            "Managing another person's inbox needs their opt-in or an inbox:manage grant",
            "inbox_cross_user_grant_required",
        )),
    }
}

fn archived_by(caller: &Caller) -> ArchivedBy {
    ArchivedBy {
        agent_id: caller.agent_id().map(str::to_string),
        run_id: caller.actor().run_id.clone(),
    }
}

/// Archives the task from a person's "Mine" inbox until it changes again.
#[utoipa::path(post, path = "/api/issues/{id}/inbox-archive", tag = "issues",
    params(("id" = String, Path)), request_body(content = Option<ArchiveBody>), responses((status = 200, body = Archive),
        (status = 401, description = "Agent run id required", body = crate::error::ErrorBody),
        (status = 403, description = "Target person not allowed", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn archive(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Archive>> {
    let body = archive_body(&body)?;
    let issue = access::issue(&app, &caller, &id).await?;
    let user = archive_target(&caller, &issue, &body)?;
    let by = archived_by(&caller);
    let state = inbox_state::archive(
        &app.store,
        caller.actor(),
        &issue.company_id,
        &issue.id,
        &user,
        &by,
    )
    .await?;
    Ok(Json(state))
}

/// Brings the task back to a person's "Mine" inbox.
#[utoipa::path(delete, path = "/api/issues/{id}/inbox-archive", tag = "issues",
    params(("id" = String, Path)), request_body(content = Option<ArchiveBody>), responses((status = 200, body = Object),
        (status = 401, description = "Agent run id required", body = crate::error::ErrorBody),
        (status = 403, description = "Target person not allowed", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn unarchive(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let body = archive_body(&body)?;
    let issue = access::issue(&app, &caller, &id).await?;
    let user = archive_target(&caller, &issue, &body)?;
    let removed = inbox_state::unarchive(
        &app.store,
        caller.actor(),
        &issue.company_id,
        &issue.id,
        &user,
    )
    .await?;
    Ok(Json(match removed {
        Some(row) => serde_json::to_value(row)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
        None => json!({ "ok": true, "userId": user }),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct MineQuery {
    /// The person whose "Mine" inbox.
    user_id: Option<String>,
    /// Statuses, comma-separated (default: all but cancelled).
    status: Option<String>,
}

const MINE_STATUSES: &[IssueStatus] = &[
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Blocked,
    IssueStatus::Done,
];

/// A person's "Mine" inbox as an agent sees it: the tasks that person
/// created, is assigned or has read, less those they archived (until the
/// task changes again), each with `isUnread`.
#[utoipa::path(get, path = "/api/agents/me/inbox/mine", tag = "agents", params(MineQuery),
    responses((status = 200, body = [Object]),
        (status = 400, description = "userId missing or an unknown status", body = crate::error::ErrorBody),
        (status = 401, description = "Agent authentication required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn mine(
    State(app): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<MineQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    if caller.agent_id().is_none() {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Agent authentication required",
        ));
    }
    let company_id = caller.actor().company_id.clone().unwrap_or_default();
    let user = query
        .user_id
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::validation(json!([{ "code": "too_small", "path": ["userId"], "message": "userId is required" }]))
        })?
        .to_string();
    let statuses = parse_statuses(query.status.as_deref())?;
    Ok(Json(mine_items(&app, &company_id, &user, statuses).await?))
}

fn parse_statuses(csv: Option<&str>) -> ApiResult<Vec<IssueStatus>> {
    let Some(csv) = csv.filter(|s| !s.trim().is_empty()) else {
        return Ok(MINE_STATUSES.to_vec());
    };
    csv.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            IssueStatus::parse(s).ok_or_else(|| {
                ApiError::validation(json!([{ "code": "invalid_value", "path": ["status"],
                    "message": format!("Invalid status {s:?}") }]))
            })
        })
        .collect()
}

/// The "Mine" inbox of `user` in a company, upstream's issue rows with
/// `isUnread` and `myLastTouchAt`.
async fn mine_items(
    app: &AppState,
    company_id: &str,
    user: &str,
    statuses: Vec<IssueStatus>,
) -> ApiResult<Vec<Value>> {
    let items = inbox_state::mine(
        &app.store,
        company_id,
        user,
        statuses,
        user == LOCAL_BOARD_USER_ID,
    )
    .await?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let mut value = serde_json::to_value(&item.issue)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        if let Some(obj) = value.as_object_mut() {
            obj.insert("isUnread".into(), json!(item.unread));
            obj.insert("myLastTouchAt".into(), json!(item.last_read_at));
        }
        out.push(value);
    }
    Ok(out)
}
