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

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WakeDiagnostics {
    issue_id: String,
    identifier: String,
    /// Agents waking each other on the task since its last progress; none
    /// when they have not.
    wake_loop: Option<LoopState>,
}

/// Why agents are (or are not) being woken on a task.
#[utoipa::path(get, path = "/api/issues/{id}/diagnostics/wakes", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = WakeDiagnostics), (status = 404, description = "Issue not found")))]
async fn diagnostics(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<WakeDiagnostics>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(WakeDiagnostics {
        wake_loop: wake_loops::state(&app.store, &issue.id).await?,
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
