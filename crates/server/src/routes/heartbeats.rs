//! The heartbeat surface: who am I, what should I work on, wake an agent,
//! and the record of every run.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::heartbeat::{RunStatus, WakeSource};
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::model::{HeartbeatRun, RunEvent, WakeupRequest};
use paperclip_store::runs;
use paperclip_store::wakes::{self, Wake};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_limit, JsonBody, QueryParams};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(inbox_lite))
        .routes(routes!(wakeup))
        .routes(routes!(invoke))
        .routes(routes!(list_runs))
        .routes(routes!(get_run))
        .routes(routes!(run_events))
        .routes(routes!(run_log))
        .routes(routes!(cancel_run))
        .routes(routes!(run_callback))
}

/// The calling agent.
#[utoipa::path(get, path = "/api/agents/me", tag = "agents",
    responses((status = 200, body = crate::agent_view::AgentView), (status = 401, description = "Agent authentication required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn me(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<crate::agent_view::AgentView>> {
    let id = caller.agent_id().ok_or_else(agent_only)?;
    let agent = paperclip_store::org::agents::get(&app.store, id).await?;
    Ok(Json(crate::agent_view::detail(&app, agent).await?))
}

fn agent_only() -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "Agent authentication required")
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    id: String,
    identifier: String,
    title: String,
    status: IssueStatus,
    priority: IssuePriority,
    project_id: Option<String>,
    goal_id: Option<String>,
    parent_id: Option<String>,
    updated_at: String,
    active_run: Option<InboxRun>,
    dependency_ready: bool,
    unresolved_blocker_count: usize,
    unresolved_blocker_issue_ids: Vec<String>,
}

/// The run working on an inbox item right now. Fields in name order, as the
/// JSON object this replaced.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboxRun {
    id: String,
    started_at: Option<String>,
    status: RunStatus,
}

/// The calling agent's open assignments, most urgent first: what to pick
/// up next. Work blocked by unfinished issues says so (`dependencyReady`).
#[utoipa::path(get, path = "/api/agents/me/inbox-lite", tag = "agents",
    responses((status = 200, body = [InboxItem]), (status = 401, description = "Agent authentication required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn inbox_lite(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<InboxItem>>> {
    let agent_id = caller.agent_id().ok_or_else(agent_only)?;
    let company_id = caller.actor().company_id.clone().unwrap_or_default();
    let filter = paperclip_store::issues::Filter {
        statuses: vec![
            paperclip_core::issue::IssueStatus::Todo,
            paperclip_core::issue::IssueStatus::InProgress,
            paperclip_core::issue::IssueStatus::InReview,
            paperclip_core::issue::IssueStatus::Blocked,
        ],
        assignee_agent_id: Some(agent_id.to_string()),
        limit: 500,
        ..Default::default()
    };
    let page = paperclip_store::issues::list(&app.store, &company_id, &filter).await?;
    let live = runs::list(
        &app.store,
        &company_id,
        &runs::Filter {
            agent_id: Some(agent_id.to_string()),
            live_only: true,
            limit: 100,
            ..Default::default()
        },
    )
    .await?;
    let mut items: Vec<InboxItem> = page
        .issues
        .into_iter()
        .map(|issue| {
            let unresolved: Vec<String> = issue
                .blocked_by
                .iter()
                .filter(|b| !b.status.is_terminal())
                .map(|b| b.id.clone())
                .collect();
            let active_run = live
                .iter()
                .find(|r| r.issue_id.as_deref() == Some(issue.id.as_str()))
                .map(|r| InboxRun {
                    id: r.id.clone(),
                    started_at: r.started_at.clone(),
                    status: r.status,
                });
            InboxItem {
                dependency_ready: unresolved.is_empty(),
                unresolved_blocker_count: unresolved.len(),
                unresolved_blocker_issue_ids: unresolved,
                active_run,
                id: issue.id,
                identifier: issue.identifier,
                title: issue.title,
                status: issue.status,
                priority: issue.priority,
                project_id: issue.project_id,
                goal_id: issue.goal_id,
                parent_id: issue.parent_id,
                updated_at: issue.updated_at,
            }
        })
        .collect();
    let rank = |p: IssuePriority| match p {
        IssuePriority::Critical => 0,
        IssuePriority::High => 1,
        IssuePriority::Medium => 2,
        IssuePriority::Low => 3,
    };
    items.sort_by(|a, b| {
        rank(a.priority)
            .cmp(&rank(b.priority))
            .then(b.updated_at.cmp(&a.updated_at))
    });
    Ok(Json(items))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WakeBody {
    /// `timer | assignment | on_demand | automation`; default `on_demand`.
    source: Option<String>,
    /// `manual | ping | callback | system`; default `manual`.
    trigger_detail: Option<String>,
    reason: Option<String>,
    #[schema(value_type = Option<Object>)]
    payload: Option<Value>,
    issue_id: Option<String>,
    idempotency_key: Option<String>,
    /// Retry: the failed, timed-out or stopped run of this agent to start
    /// again on its task, with the comments it was handed
    /// (reason `retry_failed_run`).
    failed_run_id: Option<String>,
}

/// Wakes the agent: a run is queued (or the wake folds into the run already
/// waiting). 202 with the run; 409 when the agent may not run (paused,
/// terminated, or its policy refuses this kind of wake).
#[utoipa::path(post, path = "/api/agents/{id}/wakeup", tag = "agents",
    params(("id" = String, Path)), request_body = WakeBody,
    responses((status = 202, body = WokenRun), (status = 409, description = "Wake skipped", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn wakeup(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<WakeBody>,
) -> ApiResult<(StatusCode, Json<WokenRun>)> {
    wake(&app, &caller, &id, body).await
}

/// Runs the agent's heartbeat now (an on-demand, manual wake).
#[utoipa::path(post, path = "/api/agents/{id}/heartbeat/invoke", tag = "agents",
    params(("id" = String, Path)),
    responses((status = 202, body = WokenRun), (status = 409, description = "Wake skipped", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn invoke(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<WokenRun>)> {
    let body = WakeBody {
        reason: Some("manual_invoke".into()),
        ..WakeBody::default()
    };
    wake(&app, &caller, &id, body).await
}

/// A wake's answer: the run queued (or folded into), with the wakeup
/// request that asked for it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WokenRun {
    #[serde(flatten)]
    run: HeartbeatRun,
    wakeup_request: WakeupRequest,
}

async fn wake(
    app: &AppState,
    caller: &Caller,
    agent_id: &str,
    body: WakeBody,
) -> ApiResult<(StatusCode, Json<WokenRun>)> {
    let agent = access::agent(app, caller, agent_id).await?;
    let source = match body.source.as_deref() {
        None => WakeSource::OnDemand,
        Some(s) => WakeSource::parse(s).ok_or_else(|| {
            ApiError::validation(json!([{
                "code": "invalid_value", "path": ["source"],
                "values": WakeSource::ALL.iter().map(|w| w.as_str()).collect::<Vec<_>>(),
                "message": format!("Invalid source {s:?}"),
            }]))
        })?,
    };
    let trigger = body.trigger_detail.unwrap_or_else(|| "manual".into());
    if !["manual", "ping", "callback", "system"].contains(&trigger.as_str()) {
        return Err(ApiError::validation(json!([{
            "code": "invalid_value", "path": ["triggerDetail"], "values": ["manual", "ping", "callback", "system"],
            "message": format!("Invalid triggerDetail {trigger:?}"),
        }])));
    }
    if let Some(issue) = &body.issue_id {
        let issue = access::issue(app, caller, issue).await?;
        if issue.company_id != agent.company_id {
            return Err(ApiError::not_found("Issue not found"));
        }
    }
    let woken = match &body.failed_run_id {
        Some(failed) => {
            paperclip_store::runs::follow_up::retry(&app.store, caller.actor(), &agent.id, failed)
                .await?
        }
        None => {
            wakes::enqueue(
                &app.store,
                caller.actor(),
                Wake {
                    agent_id: agent.id.clone(),
                    source,
                    trigger_detail: Some(trigger),
                    reason: body.reason,
                    payload: body.payload,
                    issue_id: body.issue_id,
                    idempotency_key: body.idempotency_key,
                },
            )
            .await?
        }
    };
    match woken.run {
        Some(run) => Ok((
            StatusCode::ACCEPTED,
            Json(WokenRun {
                run,
                wakeup_request: woken.request,
            }),
        )),
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            // In words for the toast; `skipReason` keeps the code.
            format!(
                "{} was not woken: {}",
                agent.name,
                woken.request.skip_reason.map_or("not runnable", |r| {
                    paperclip_web::thrift::skip_reason_text(r.as_str())
                })
            ),
        )
        .with_details(json!({
            "wakeupRequestId": woken.request.id,
            "skipReason": woken.request.skip_reason,
            "agentStatus": agent.status,
        }))),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct RunsQuery {
    agent_id: Option<String>,
    status: Option<String>,
    issue_id: Option<String>,
    limit: Option<String>,
}

/// Newest first.
#[utoipa::path(get, path = "/api/companies/{companyId}/heartbeat-runs", tag = "heartbeats",
    params(("companyId" = String, Path), RunsQuery), responses((status = 200, body = [HeartbeatRun])))]
#[paperclip_macros::handler]
async fn list_runs(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<RunsQuery>,
) -> ApiResult<Json<Vec<HeartbeatRun>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let filter = runs::Filter {
        agent_id: q.agent_id,
        status: q.status,
        issue_id: q.issue_id,
        live_only: false,
        limit: parse_limit(q.limit.as_deref(), 100, 1000)?,
    };
    Ok(Json(runs::list(&app.store, &company_id, &filter).await?))
}

#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}", tag = "heartbeats",
    params(("runId" = String, Path)), responses((status = 200, body = HeartbeatRun), (status = 404, description = "Heartbeat run not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_run(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<HeartbeatRun>> {
    Ok(Json(access::run(&app, &caller, &id).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct EventsQuery {
    /// Only events with a larger `seq`.
    after_seq: Option<String>,
    limit: Option<String>,
}

/// The run's timeline, in `seq` order.
#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}/events", tag = "heartbeats",
    params(("runId" = String, Path), EventsQuery), responses((status = 200, body = [RunEvent])))]
#[paperclip_macros::handler]
async fn run_events(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<EventsQuery>,
) -> ApiResult<Json<Vec<RunEvent>>> {
    let run = access::run(&app, &caller, &id).await?;
    let after: i64 = match q.after_seq.as_deref() {
        None | Some("") => 0,
        Some(s) => s.parse().map_err(|_| {
            ApiError::validation(json!([{ "code": "invalid_type", "path": ["afterSeq"], "message": "afterSeq must be an integer" }]))
        })?,
    };
    let limit = parse_limit(q.limit.as_deref(), 1000, 5000)?;
    Ok(Json(runs::events(&app.store, &run.id, after, limit).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct LogQuery {
    /// Byte offset into the NDJSON log.
    offset: Option<u64>,
    /// At most this many bytes (default 256 KiB, at most 4 MiB).
    limit_bytes: Option<u64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunLog {
    run_id: String,
    store: Option<String>,
    log_ref: Option<String>,
    /// Whole NDJSON lines `{ts, stream, chunk, seq}` (a line longer than
    /// `limitBytes` is split between characters across pages).
    content: String,
    offset: u64,
    /// Where the next page starts; equal to `offset` while nothing new is complete.
    next_offset: u64,
    /// Present when the log outgrew `--run-log-max-bytes`: this many bytes
    /// after its head were left out (a marker line stands for them).
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted_bytes: Option<u64>,
    /// Present when the company's log retention deleted the log (then
    /// `content` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    removed_at: Option<String>,
    /// `log_unavailable` when a finished run's log is gone (retention, a
    /// deleted file, missing chunks, never written): then the excerpts the
    /// run row kept are all there is, and they are included.
    status: paperclip_core::run_status::RunLogStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stdout_excerpt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stderr_excerpt: Option<String>,
}

/// The full run log (NDJSON), a byte range at a time.
#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}/log", tag = "heartbeats",
    params(("runId" = String, Path), LogQuery), responses((status = 200, body = RunLog)))]
#[paperclip_macros::handler]
async fn run_log(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<LogQuery>,
) -> ApiResult<Json<RunLog>> {
    let run = access::run(&app, &caller, &id).await?;
    let offset = q.offset.unwrap_or(0);
    if offset > paperclip_core::limits::LOG_OFFSET_MAX {
        return Err(ApiError::validation(json!([{
            "code": "too_big",
            "path": ["offset"],
            "maximum": paperclip_core::limits::LOG_OFFSET_MAX,
            "message": format!("offset must be at most {}", paperclip_core::limits::LOG_OFFSET_MAX),
        }])));
    }
    let limit = q
        .limit_bytes
        .unwrap_or(256 * 1024)
        .clamp(1, 4 * 1024 * 1024);
    let log_ref = run
        .log_ref
        .clone()
        .unwrap_or_else(|| format!("{}/{}.ndjson", run.company_id, run.id));
    let failed = |e: std::io::Error| {
        tracing::error!(error = %e, "reading run log");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Run log could not be read",
        )
    };
    let (page, cut) = if run.log_removed_at.is_some() {
        let empty = paperclip_runtime::logs::LogPage {
            content: String::new(),
            next_offset: offset,
        };
        (empty, None)
    } else {
        let logs = app.runtime.logs();
        let page = logs.read(&log_ref, offset, limit).map_err(failed)?;
        (page, logs.cut(&log_ref).map_err(failed)?)
    };
    let why = paperclip_core::run_status::log_unavailable(paperclip_core::run_status::LogFacts {
        live: matches!(run.status, RunStatus::Queued | RunStatus::Running),
        started: run.started_at.is_some(),
        has_ref: run.log_ref.is_some(),
        bytes: run.log_bytes,
        removed: run.log_removed_at.is_some(),
        offset,
        read_empty: page.content.is_empty(),
    });
    let (status, stdout_excerpt, stderr_excerpt) = match why {
        Some(_) => (
            paperclip_core::run_status::RunLogStatus::LogUnavailable,
            run.stdout_excerpt,
            run.stderr_excerpt,
        ),
        None => (
            paperclip_core::run_status::RunLogStatus::Available,
            None,
            None,
        ),
    };
    Ok(Json(RunLog {
        status,
        unavailable_reason: why.map(str::to_string),
        stdout_excerpt,
        stderr_excerpt,
        next_offset: page.next_offset,
        run_id: run.id,
        store: run
            .log_store
            .or(Some(app.runtime.logs().kind().to_string())),
        log_ref: Some(log_ref),
        content: page.content,
        offset,
        omitted_bytes: cut.map(|c| c.omitted_bytes()),
        removed_at: run.log_removed_at,
    }))
}

/// Cancels a queued or running run (the process group gets TERM, then KILL
/// after the adapter's grace). Answers with the run once it has stopped.
#[utoipa::path(post, path = "/api/heartbeat-runs/{runId}/cancel", tag = "heartbeats",
    params(("runId" = String, Path)),
    responses((status = 200, body = HeartbeatRun), (status = 409, description = "Run is not active", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn cancel_run(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<HeartbeatRun>> {
    let actor = caller.require_board()?;
    access::run(&app, &caller, &id).await?;
    Ok(Json(
        app.runtime
            .cancel_run(actor, &id, "cancelled by the board")
            .await?,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallbackBody {
    /// `succeeded` or `failed`.
    status: String,
    error: Option<String>,
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
    #[schema(value_type = Option<Object>)]
    usage: Option<Value>,
}

/// Completes an asynchronous HTTP run. Authenticated with that run's own
/// token (`PAPERCLIP_API_KEY` as sent to the agent).
#[utoipa::path(post, path = "/api/heartbeat-runs/{runId}/callback", tag = "heartbeats",
    params(("runId" = String, Path)), request_body = CallbackBody,
    responses((status = 200, body = HeartbeatRun), (status = 403, description = "Only the run itself may complete it", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn run_callback(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<CallbackBody>,
) -> ApiResult<Json<HeartbeatRun>> {
    if caller.actor().run_id.as_deref() != Some(id.as_str()) || caller.agent_id().is_none() {
        return Err(ApiError::forbidden("Only the run itself may complete it"));
    }
    let status = match body.status.as_str() {
        "succeeded" => RunStatus::Succeeded,
        "failed" => RunStatus::Failed,
        _ => {
            return Err(ApiError::validation(json!([{
                "code": "invalid_value", "path": ["status"], "values": ["succeeded", "failed"],
                "message": "status must be succeeded or failed",
            }])))
        }
    };
    let finish = runs::Finish {
        error_code: (status == RunStatus::Failed).then(|| "callback_failed".to_string()),
        error: body.error,
        usage: body.usage,
        result: body.result,
        log_store: Some(app.runtime.logs().kind().to_string()),
        ..runs::Finish::new(status)
    };
    Ok(Json(app.runtime.complete_async(&id, finish).await?))
}
