//! Upstream's issue-tree control and the task's supervision routes: tree
//! holds (the board pauses and resumes a subtree), the monitor's
//! `check-now`, the watchdog, recovery actions and the stalled-review
//! decision.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::input::IssuePatch;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use paperclip_core::tree_control::{
    HoldInput, HoldStatus, PreviewInput, ReleaseInput, ResolveRecoveryInput, StalledReviewAction,
    StalledReviewInput, TreeMode, WatchdogInput,
};
use paperclip_store::issues::{monitors, tree_holds, watchdogs};
use paperclip_store::wakes::{self, Wake};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(preview))
        .routes(routes!(state))
        .routes(routes!(create_hold, list_holds))
        .routes(routes!(get_hold))
        .routes(routes!(release_hold))
        .routes(routes!(check_now))
        .routes(routes!(get_watchdog, put_watchdog, delete_watchdog))
        .routes(routes!(recovery_actions))
        .routes(routes!(resolve_recovery))
        .routes(routes!(stalled_review_decision))
}

/// Upstream lets the board, or the task's assignee agent, manage its monitor.
pub(crate) fn can_manage_monitor(caller: &Caller, issue: &Issue) -> ApiResult<()> {
    if caller.actor().is_board() {
        return Ok(());
    }
    match caller.agent_id() {
        Some(agent) if issue.assignee_agent_id.as_deref() == Some(agent) => Ok(()),
        _ => Err(ApiError::forbidden(
            "Only the assignee agent or a board user can manage issue monitors",
        )),
    }
}

fn hold_id(id: &str) -> ApiResult<()> {
    uuid::Uuid::parse_str(id)
        .map(|_| ())
        .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "Invalid hold ID"))
}

/// What a tree-control action would touch.
#[utoipa::path(post, path = "/api/issues/{id}/tree-control/preview", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn preview(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<PreviewInput>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?;
    let root = access::issue(&app, &caller, &id).await?;
    let preview =
        tree_holds::preview(&app.store, actor, &root, input.mode, input.release_policy).await?;
    Ok(Json(preview))
}

/// The active pause over the task (its own or an ancestor's), if any.
#[utoipa::path(get, path = "/api/issues/{id}/tree-control/state", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn state(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    let issue = access::issue(&app, &caller, &id).await?;
    let gate = tree_holds::active_pause_gate(&app.store, &issue).await?;
    Ok(Json(json!({ "activePauseHold": gate })))
}

/// Puts a hold on the task's subtree: 201 for a pause, 200 for a resume
/// (which releases the pauses it covers at once).
#[utoipa::path(post, path = "/api/issues/{id}/tree-holds", tag = "issues",
    params(("id" = String, Path)), responses((status = 201, body = Object), (status = 200, body = Object),
        (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 422, description = "Mode not supported", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_hold(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<HoldInput>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let actor = caller.require_board()?;
    let root = access::issue(&app, &caller, &id).await?;
    let mode = input.mode;
    let created = tree_holds::create(&app.store, actor, &root, input).await?;
    // A pause stops the subtree's running runs, as upstream's does; its
    // queued runs wait for the release.
    if mode == TreeMode::Pause {
        let running = created.preview["activeRuns"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| {
                r["status"] == "running"
                    && created.hold["members"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|m| m["issueId"] == r["issueId"] && m["skipped"] == false)
            });
        for run in running {
            if let Some(id) = run["id"].as_str() {
                let stopped = app
                    .runtime
                    .cancel_run(actor, id, "Cancelled by a board operator's subtree pause")
                    .await;
                if let Err(err) = stopped {
                    tracing::warn!(run = %id, error = ?err, "a held run could not be stopped");
                }
            }
        }
    }
    let mut body = json!({ "hold": created.hold, "preview": created.preview });
    if let Some(ids) = created.resumed_pause_hold_ids {
        body["resumedPauseHoldIds"] = json!(ids);
    }
    let status = if mode == TreeMode::Resume {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(body)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
struct HoldQuery {
    status: Option<String>,
    mode: Option<String>,
    include_members: Option<String>,
}

/// The holds rooted at the task (an unknown `status` or `mode` filter is
/// ignored, as upstream does).
#[utoipa::path(get, path = "/api/issues/{id}/tree-holds", tag = "issues",
    params(("id" = String, Path), HoldQuery), responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn list_holds(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<HoldQuery>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    let root = access::issue(&app, &caller, &id).await?;
    let status = match query.status.as_deref() {
        Some("active") => Some(HoldStatus::Active),
        Some("released") => Some(HoldStatus::Released),
        _ => None,
    };
    let mode = query
        .mode
        .as_deref()
        .and_then(|m| serde_json::from_value::<TreeMode>(json!(m)).ok());
    let members = query.include_members.as_deref() == Some("true");
    let holds = tree_holds::list(&app.store, &root, status, mode, members).await?;
    Ok(Json(Value::Array(holds)))
}

#[utoipa::path(get, path = "/api/issues/{id}/tree-holds/{holdId}", tag = "issues",
    params(("id" = String, Path), ("holdId" = String, Path)), responses((status = 200, body = Object),
        (status = 400, description = "Invalid hold ID", body = crate::error::ErrorBody),
        (status = 404, description = "Issue tree hold not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_hold(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, hold)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    let root = access::issue(&app, &caller, &id).await?;
    hold_id(&hold)?;
    Ok(Json(tree_holds::get(&app.store, &root, &hold).await?))
}

/// Releases a hold; the subtree's queued runs may start at once.
#[utoipa::path(post, path = "/api/issues/{id}/tree-holds/{holdId}/release", tag = "issues",
    params(("id" = String, Path), ("holdId" = String, Path)), responses((status = 200, body = Object),
        (status = 400, description = "Invalid hold ID", body = crate::error::ErrorBody),
        (status = 404, description = "Issue tree hold not found", body = crate::error::ErrorBody),
        (status = 409, description = "Already released", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn release_hold(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, hold)): Path<(String, String)>,
    ValidJson(input): ValidJson<ReleaseInput>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?;
    let root = access::issue(&app, &caller, &id).await?;
    hold_id(&hold)?;
    Ok(Json(
        tree_holds::release(&app.store, actor, &root, &hold, input).await?,
    ))
}

/// Fires the task's monitor now: its assignee agent wakes with
/// `issue_monitor_due` (409 when the task has none or cannot run one).
#[utoipa::path(post, path = "/api/issues/{id}/monitor/check-now", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 403, description = "Not the assignee agent or the board", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 409, description = "No monitor, or not eligible", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn check_now(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    can_manage_monitor(&caller, &issue)?;
    monitors::fire(
        &app.store,
        caller.actor(),
        &issue.id,
        chrono::Utc::now(),
        true,
    )
    .await?;
    Ok(Json(json!({ "ok": true })))
}

#[utoipa::path(get, path = "/api/issues/{id}/watchdog", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_watchdog(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(
        watchdogs::get(&app.store, &issue)
            .await?
            .unwrap_or(Value::Null),
    ))
}

/// Sets the task's watchdog agent (the board, or an agent in a run).
#[utoipa::path(put, path = "/api/issues/{id}/watchdog", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 404, description = "Issue or watchdog agent not found", body = crate::error::ErrorBody),
        (status = 409, description = "Agent not invokable", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn put_watchdog(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<WatchdogInput>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    let (watchdog, _) = watchdogs::upsert(
        &app.store,
        actor,
        &issue,
        &input.agent_id,
        input.instructions,
    )
    .await?;
    Ok(Json(watchdog))
}

#[utoipa::path(delete, path = "/api/issues/{id}/watchdog", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_watchdog(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    watchdogs::disable(&app.store, actor, &issue).await?;
    Ok(Json(json!({ "ok": true })))
}

/// Upstream's recovery actions come from its liveness sweeps, which have no
/// counterpart here (our recovery continues a dead run's work itself), so a
/// task never has one.
#[utoipa::path(get, path = "/api/issues/{id}/recovery-actions", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn recovery_actions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    access::issue(&app, &caller, &id).await?;
    Ok(Json(json!({ "active": null, "actions": [] })))
}

#[utoipa::path(post, path = "/api/issues/{id}/recovery-actions/resolve", tag = "issues",
    params(("id" = String, Path)), responses(
        (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 404, description = "Active recovery action not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn resolve_recovery(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ResolveRecoveryInput>,
) -> ApiResult<Json<Value>> {
    access::issue(&app, &caller, &id).await?;
    let _ = input;
    Err(ApiError::not_found("Active recovery action not found"))
}

/// The board decides a review that stalled: approve (done), or send it back
/// (todo, with the note as a comment) and wake the assignee to resume.
#[utoipa::path(post, path = "/api/issues/{id}/stalled-review-decision", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 409, description = "Issue is no longer a stalled review", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn stalled_review_decision(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<StalledReviewInput>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?;
    let issue = access::issue(&app, &caller, &id).await?;
    let note = input
        .note
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    if input.action == StalledReviewAction::RequestChanges && note.is_none() {
        return Err(ApiError::validation(
            json!([{ "code": "custom", "path": ["note"],
            "message": "Request changes requires a note" }]),
        ));
    }
    if issue.status != IssueStatus::InReview {
        return Err(paperclip_store::Error::conflict(
            "Issue is no longer a stalled review",
            Some(json!({ "issueId": issue.id, "currentStatus": issue.status.as_str() })),
        )
        .into());
    }
    let status = if input.action == StalledReviewAction::Approve {
        IssueStatus::Done
    } else {
        IssueStatus::Todo
    };
    let patch = IssuePatch {
        status: Some(status),
        comment: note,
        reopen: Some(false),
        ..IssuePatch::default()
    };
    let updated = paperclip_store::issues::update(&app.store, actor, &issue.id, patch).await?;
    let mut wake_queued = false;
    if let (false, Some(agent)) = (
        input.action == StalledReviewAction::Approve,
        updated.issue.assignee_agent_id.clone(),
    ) {
        let woken = wakes::enqueue(
            &app.store,
            actor,
            Wake {
                agent_id: agent,
                source: WakeSource::Automation,
                trigger_detail: Some("system".into()),
                reason: Some("issue_status_changed".into()),
                payload: Some(
                    json!({ "issueId": issue.id, "mutation": "stalled_review_decision",
                "reviewDecision": input.action.as_str(), "resumeIntent": true }),
                ),
                issue_id: Some(issue.id.clone()),
                idempotency_key: Some(format!(
                    "stalled-review-decision:{}:{}",
                    issue.id,
                    input.action.as_str()
                )),
            },
        )
        .await;
        wake_queued = woken.is_ok_and(|w| w.run.is_some());
    }
    Ok(Json(
        json!({ "issue": updated.issue, "action": input.action.as_str(),
        "comment": updated.comment, "wakeQueued": wake_queued }),
    ))
}
