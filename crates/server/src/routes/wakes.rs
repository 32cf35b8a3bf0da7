//! What became of each wake: an agent's wake requests (run, coalesced or
//! skipped and why), a task's wake diagnostics with its loop breaker, and
//! the board's release of a task whose agents kept waking each other.

use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::heartbeat::WakeStatus;
use paperclip_core::stored::Stored;
use paperclip_store::wakes::loops::{self as wake_loops, LoopState};
use paperclip_store::wakes::{self, WakeRecord};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_limit, QueryParams};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(diagnostics))
        .routes(routes!(release))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct WakesQuery {
    /// Only wakes in this state (`skipped`, `queued`, `completed`, ...).
    status: Option<String>,
    /// The `createdAt` of the last wake already seen: the next page.
    before: Option<String>,
    limit: Option<String>,
}

/// The agent's wakes, newest first, each with what became of it.
#[utoipa::path(get, path = "/api/agents/{id}/wakeup-requests", tag = "agents",
    params(("id" = String, Path), WakesQuery),
    responses((status = 200, body = [WakeRecord]), (status = 400, description = "Invalid filter"), (status = 404, description = "Agent not found")))]
#[paperclip_macros::handler]
async fn list(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<WakesQuery>,
) -> ApiResult<Json<Vec<WakeRecord>>> {
    let agent = access::agent(&app, &caller, &id).await?;
    let status = match q.status.as_deref() {
        None => None,
        Some(text) => Some(WakeStatus::from_stored(text).ok_or_else(|| {
            let options: Vec<&str> = WakeStatus::ALL.iter().map(|s| s.as_str()).collect();
            ApiError::validation(json!([{
                "code": "invalid_enum_value", "path": ["status"], "options": options,
                "message": format!("Invalid status {text:?}"),
            }]))
        })?),
    };
    if let Some(before) = q.before.as_deref() {
        if chrono::DateTime::parse_from_rfc3339(before).is_err() {
            return Err(ApiError::validation(json!([{
                "code": "invalid_string", "path": ["before"],
                "message": "before must be an ISO 8601 time (a wake's createdAt)",
            }])));
        }
    }
    let limit = parse_limit(q.limit.as_deref(), 50, 500)?;
    Ok(Json(
        wakes::list(&app.store, &agent.id, status, q.before.as_deref(), limit).await?,
    ))
}

/// How far back, and how many wakes, the diagnosis reads.
const LOOKBACK_DAYS: i64 = 14;
const MAX_WAKES: i64 = 50;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WakeDiagnostics {
    issue_id: String,
    identifier: String,
    /// Agents waking each other on the task since its last progress; none
    /// when they have not.
    wake_loop: Option<LoopState>,
    issue: DiagnosedIssue,
    /// One sentence: what became of the task's latest wake.
    diagnosis: String,
    likely_reason: String,
    /// The task's wakes, newest first.
    events: Vec<WakeEvent>,
    wake_request_count: i64,
    /// Activity is not part of the diagnosis here (the task's activity is
    /// at `/issues/{id}/activity`): always 0.
    activity_record_count: i64,
    truncated: bool,
    #[schema(value_type = Object)]
    truncated_sections: serde_json::Value,
    #[schema(value_type = Object)]
    caps: serde_json::Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DiagnosedIssue {
    id: String,
    identifier: String,
    title: String,
    status: paperclip_core::issue::IssueStatus,
    priority: paperclip_core::issue::IssuePriority,
    assignee_agent_id: Option<String>,
    assignee_user_id: Option<String>,
}

/// One wake of the task (upstream's `wake_request` event).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WakeEvent {
    kind: &'static str,
    agent_id: String,
    source: paperclip_core::heartbeat::WakeSource,
    reason: Option<String>,
    status: WakeStatus,
    skip_reason: Option<paperclip_core::heartbeat::WakeSkipReason>,
    coalesced_count: i64,
    run_id: Option<String>,
    requested_at: String,
    claimed_at: Option<String>,
    finished_at: Option<String>,
    /// The run's error code when it failed.
    failure_class: Option<String>,
}

/// The sentence for the latest wake (`None`: no wake in the window).
fn diagnose(identifier: &str, held: bool, latest: Option<&WakeEvent>) -> String {
    if held {
        return format!("Wakes on {identifier} are held: its agents kept waking each other.");
    }
    let Some(wake) = latest else {
        return format!("No agent was woken for {identifier} in the last {LOOKBACK_DAYS} days.");
    };
    let why = wake.reason.as_deref().unwrap_or(wake.source.as_str());
    match wake.skip_reason {
        Some(skip) => format!(
            "The most recent wake for {identifier} was skipped ({}) for {why}.",
            skip.as_str()
        ),
        None => format!(
            "The most recent wake for {identifier} {} for {why}.",
            match wake.status {
                WakeStatus::Queued => "is queued",
                WakeStatus::Coalesced => "was folded into a waiting run",
                WakeStatus::Claimed => "is running",
                WakeStatus::Failed => "failed",
                WakeStatus::Cancelled => "was cancelled",
                WakeStatus::Skipped | WakeStatus::Completed => "completed",
            }
        ),
    }
}

/// Why agents are (or are not) being woken on a task.
#[utoipa::path(get, path = "/api/issues/{id}/diagnostics/wakes", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = WakeDiagnostics), (status = 404, description = "Issue not found")))]
#[paperclip_macros::handler]
async fn diagnostics(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<WakeDiagnostics>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let since = (chrono::Utc::now() - chrono::Duration::days(LOOKBACK_DAYS))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let (found, count) = wakes::for_issue(&app.store, &issue.id, &since, MAX_WAKES).await?;
    let events: Vec<WakeEvent> = found
        .into_iter()
        .map(|w| {
            let r = w.record.request;
            WakeEvent {
                kind: "wake_request",
                agent_id: r.agent_id,
                source: r.source,
                reason: r.reason,
                status: r.status,
                skip_reason: r.skip_reason,
                coalesced_count: r.coalesced_count,
                run_id: r.run_id,
                requested_at: r.created_at,
                claimed_at: w.run_started_at,
                finished_at: w.run_finished_at,
                failure_class: w.record.run_error_code,
            }
        })
        .collect();
    let wake_loop = wake_loops::state(&app.store, &issue.id).await?;
    let held = wake_loop.as_ref().is_some_and(|l| l.held_at.is_some());
    let diagnosis = diagnose(&issue.identifier, held, events.first());
    let truncated = count > events.len() as i64;
    Ok(Json(WakeDiagnostics {
        wake_loop,
        issue: DiagnosedIssue {
            id: issue.id.clone(),
            identifier: issue.identifier.clone(),
            title: issue.title,
            status: issue.status,
            priority: issue.priority,
            assignee_agent_id: issue.assignee_agent_id,
            assignee_user_id: issue.assignee_user_id,
        },
        likely_reason: diagnosis.clone(),
        diagnosis,
        events,
        wake_request_count: count,
        activity_record_count: 0,
        truncated,
        truncated_sections: json!({ "wakeRequests": truncated, "activityRecords": false }),
        caps: json!({ "maxWakeRequests": MAX_WAKES, "maxActivityRecords": 0, "lookbackDays": LOOKBACK_DAYS }),
        issue_id: issue.id,
        identifier: issue.identifier,
    }))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Released {
    issue_id: String,
    /// The runs queued for the agents whose wakes were held.
    run_ids: Vec<String>,
}

/// Lets agents wake each other on the task again: the count starts over
/// and each agent whose wakes were held is woken once. Board only.
#[utoipa::path(post, path = "/api/issues/{id}/wake-loop/release", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = Released), (status = 403, description = "Board only"),
        (status = 404, description = "Issue not found"), (status = 409, description = "Wakes on the task are not held")))]
#[paperclip_macros::handler]
async fn release(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Released>> {
    let actor = caller.require_board()?;
    let issue = access::issue(&app, &caller, &id).await?;
    let woken = paperclip_store::wakes::release(&app.store, actor, &issue.id).await?;
    Ok(Json(Released {
        issue_id: issue.id,
        run_ids: woken
            .into_iter()
            .filter_map(|w| w.run.map(|r| r.id))
            .collect(),
    }))
}
