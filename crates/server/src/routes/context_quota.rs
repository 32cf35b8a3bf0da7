//! Context and quota: a task's context row (its assignee's session), Compact
//! now, and the original's `costs/quota-windows`, answered from what the
//! agents' CLIs last reported (no provider is asked).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::context::QuotaWindow;
use paperclip_store::runs::context::{self, TaskContext};
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(task_context))
        .routes(routes!(compact))
        .routes(routes!(quota_windows))
}

/// The task's context row: how full its assignee's session is.
#[utoipa::path(get, path = "/api/issues/{id}/context", tag = "issues",
    params(("id" = String, Path, description = "Issue UUID or identifier")),
    responses((status = 200, body = Object),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn task_context(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let row: Option<TaskContext> = context::for_issue(&app.store, &issue).await?;
    Ok(Json(json!({
        "issueId": issue.id,
        "identifier": issue.identifier,
        "context": row,
    })))
}

/// Compact now: queues a run of the assignee that resumes its session for
/// the task and runs the CLI's own compaction (board only).
#[utoipa::path(post, path = "/api/issues/{id}/context/compact", tag = "issues",
    params(("id" = String, Path, description = "Issue UUID or identifier")),
    responses((status = 202, body = Object),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Issue not found", body = crate::error::ErrorBody),
        (status = 409, description = "No session, or a run of the task is live", body = crate::error::ErrorBody),
        (status = 422, description = "The adapter cannot compact", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn compact(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let actor = caller.require_board()?;
    let issue = access::issue(&app, &caller, &id).await?;
    let woken =
        paperclip_store::wakes::compact::request_compaction(&app.store, actor, &issue).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "issueId": issue.id,
            "identifier": issue.identifier,
            "runId": woken.run.as_ref().map(|r| r.id.clone()),
            "wakeupRequestId": woken.request.id,
        })),
    ))
}

/// The original's provider quota windows, from the latest report each
/// agent's CLI gave: per provider, the newest report of each window.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/quota-windows", tag = "costs",
    params(("companyId" = String, Path)),
    responses((status = 200, body = [Object]),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn quota_windows(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
) -> ApiResult<Json<Vec<Value>>> {
    caller.ensure_company(&c)?;
    caller.require_board()?;
    paperclip_store::org::companies::exists(&app.store, &c).await?;
    let snapshots = context::quota_snapshots(&app.store, &c).await?;
    let mut by_provider: BTreeMap<String, Vec<QuotaWindow>> = BTreeMap::new();
    // Newest first: a window already taken from a newer report stays.
    for snap in snapshots {
        let windows = by_provider.entry(snap.provider).or_default();
        for w in snap.windows {
            if !windows.iter().any(|have| have.label == w.label) {
                windows.push(w);
            }
        }
    }
    Ok(Json(
        by_provider
            .into_iter()
            .map(|(provider, windows)| {
                json!({ "provider": provider, "source": "cli-report", "ok": true, "windows": windows })
            })
            .collect(),
    ))
}
