//! Runs seen from a task and tasks seen from a run, in upstream's shapes:
//! live runs (company and task) as summaries naming the agent and its
//! adapter, a task's active run, a task's runs, a run's tasks.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::model::HeartbeatRun;
use paperclip_store::org::agents::Brief;
use paperclip_store::{audit::activity, org::agents, runs, views::detail};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(company_live_runs))
        .routes(routes!(issue_live_runs))
        .routes(routes!(active_run))
        .routes(routes!(issue_runs))
        .routes(routes!(run_issues))
}

/// A queued or running run, as upstream lists live runs.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveRun {
    id: String,
    status: RunStatus,
    invocation_source: String,
    trigger_detail: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
    created_at: String,
    agent_id: String,
    agent_name: String,
    adapter_type: String,
    /// The task the run works on (ours).
    issue_id: Option<String>,
}

/// The run row with the agent's name and adapter, as upstream answers.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActiveRun {
    #[serde(flatten)]
    run: HeartbeatRun,
    agent_name: String,
    adapter_type: String,
}

/// One run of a task, as upstream lists them.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssueRun {
    run_id: String,
    status: RunStatus,
    agent_id: String,
    adapter_type: Option<String>,
    started_at: Option<String>,
    finished_at: Option<String>,
    created_at: String,
    invocation_source: String,
    error_code: Option<String>,
    #[schema(value_type = Option<Object>)]
    usage_json: Option<Value>,
    #[schema(value_type = Option<Object>)]
    result_json: Option<Value>,
    log_bytes: i64,
    retry_of_run_id: Option<String>,
    liveness_state: Option<paperclip_core::run_liveness::Liveness>,
    liveness_reason: Option<String>,
    continuation_attempt: i64,
    last_useful_action_at: Option<String>,
    /// The task the run was woken for (null: it touched this one while
    /// working on another).
    context_issue_id: Option<String>,
    /// The comments that woke it (null: none did), and the latest of them.
    wake_comment_ids: Option<Vec<String>>,
    wake_comment_id: Option<String>,
    /// Who answers for the run: no person is recorded on runs here.
    responsible_user_id: Option<String>,
    #[serde(flatten)]
    upstream: paperclip_core::run_shape::RunUpstreamKeys,
}

/// A task a run worked on or touched.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunIssue {
    issue_id: String,
    identifier: String,
    title: String,
    status: IssueStatus,
    priority: IssuePriority,
}

/// The agents of these runs (name and adapter), in one query.
async fn agents_of(app: &AppState, list: &[HeartbeatRun]) -> ApiResult<HashMap<String, Brief>> {
    let mut ids: Vec<&str> = list.iter().map(|r| r.agent_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(agents::briefs(&app.store, &ids)
        .await?
        .into_iter()
        .map(|a| (a.id.clone(), a))
        .collect())
}

async fn live(
    app: &AppState,
    company_id: &str,
    issue_id: Option<String>,
) -> ApiResult<Vec<LiveRun>> {
    let filter = runs::Filter {
        live_only: true,
        issue_id,
        limit: 1000,
        ..Default::default()
    };
    let list = runs::list(&app.store, company_id, &filter).await?;
    let agents = agents_of(app, &list).await?;
    Ok(list
        .into_iter()
        .filter_map(|r| {
            let agent = agents.get(&r.agent_id)?;
            Some(LiveRun {
                agent_name: agent.name.clone(),
                adapter_type: agent.adapter_type.clone(),
                id: r.id,
                status: r.status,
                invocation_source: r.invocation_source,
                trigger_detail: r.trigger_detail,
                started_at: r.started_at,
                finished_at: r.finished_at,
                created_at: r.created_at,
                agent_id: r.agent_id,
                issue_id: r.issue_id,
            })
        })
        .collect())
}

/// Runs queued or running right now, newest first.
#[utoipa::path(get, path = "/api/companies/{companyId}/live-runs", tag = "heartbeats",
    params(("companyId" = String, Path)), responses((status = 200, body = [LiveRun])))]
#[paperclip_macros::handler]
async fn company_live_runs(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<LiveRun>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(live(&app, &company_id, None).await?))
}

/// The task's runs queued or running right now, newest first.
#[utoipa::path(get, path = "/api/issues/{issueId}/live-runs", tag = "heartbeats",
    params(("issueId" = String, Path)),
    responses((status = 200, body = [LiveRun]), (status = 404, description = "Issue not found")))]
#[paperclip_macros::handler]
async fn issue_live_runs(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<LiveRun>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(live(&app, &issue.company_id, Some(issue.id)).await?))
}

/// The run working on this issue now (running, else queued), or null.
#[utoipa::path(get, path = "/api/issues/{issueId}/active-run", tag = "issues",
    params(("issueId" = String, Path)),
    responses((status = 200, body = Option<ActiveRun>), (status = 404, description = "Issue not found")))]
#[paperclip_macros::handler]
async fn active_run(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Option<ActiveRun>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let Some(run) = runs::active_for_issue(&app.store, &issue.id).await? else {
        return Ok(Json(None));
    };
    let agent = agents::get(&app.store, &run.agent_id).await?;
    Ok(Json(Some(ActiveRun {
        run,
        agent_name: agent.name,
        adapter_type: agent.adapter_type,
    })))
}

/// The task's runs, newest first (at most 1,000): those woken for it and those that
/// acted on it while working on something else (the activity log names the run).
#[utoipa::path(get, path = "/api/issues/{id}/runs", tag = "activity",
    params(("id" = String, Path)),
    responses((status = 200, body = [IssueRun]), (status = 404, description = "Issue not found")))]
#[paperclip_macros::handler]
async fn issue_runs(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<IssueRun>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let list = runs::touching_issue(&app.store, &issue.company_id, &issue.id, 1000).await?;
    let agents = agents_of(&app, &list).await?;
    Ok(Json(
        list.into_iter()
            .map(|r| IssueRun {
                adapter_type: agents.get(&r.agent_id).map(|a| a.adapter_type.clone()),
                run_id: r.id,
                status: r.status,
                agent_id: r.agent_id,
                started_at: r.started_at,
                finished_at: r.finished_at,
                created_at: r.created_at,
                invocation_source: r.invocation_source,
                error_code: r.error_code,
                usage_json: r.usage_json,
                result_json: r.result_json,
                log_bytes: r.log_bytes,
                retry_of_run_id: r.retry_of_run_id,
                liveness_state: r.liveness_state,
                liveness_reason: r.liveness_reason,
                continuation_attempt: r.continuation_attempt,
                last_useful_action_at: r.last_useful_action_at,
                wake_comment_ids: serde_json::from_value(r.context_snapshot["commentIds"].clone())
                    .ok(),
                wake_comment_id: r.context_snapshot["commentIds"]
                    .as_array()
                    .and_then(|ids| ids.last()?.as_str().map(str::to_string)),
                context_issue_id: r.issue_id,
                responsible_user_id: None,
                upstream: r.upstream,
            })
            .collect(),
    ))
}

/// The tasks a run worked on: its own task and every task its activity
/// names.
#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}/issues", tag = "activity",
    params(("runId" = String, Path)),
    responses((status = 200, body = [RunIssue]), (status = 404, description = "Heartbeat run not found")))]
#[paperclip_macros::handler]
async fn run_issues(
    State(app): State<AppState>,
    caller: Caller,
    Path(run_id): Path<String>,
) -> ApiResult<Json<Vec<RunIssue>>> {
    let run = access::run(&app, &caller, &run_id).await?;
    let touched = activity::list(
        &app.store,
        &run.company_id,
        &activity::Filter {
            run_id: Some(run.id.clone()),
            entity_type: Some("issue".into()),
            limit: 1000,
            ..Default::default()
        },
    )
    .await?;
    let mut ids: Vec<String> = run.issue_id.iter().cloned().collect();
    for entry in touched {
        if !ids.contains(&entry.entity_id) {
            ids.push(entry.entity_id);
        }
    }
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    // A task deleted since, or of another company, is left out.
    let out = detail::summaries(&app.store, &run.company_id, &ids)
        .await?
        .into_iter()
        .map(|issue| RunIssue {
            issue_id: issue.id,
            identifier: issue.identifier,
            title: issue.title,
            status: issue.status,
            priority: issue.priority,
        })
        .collect();
    Ok(Json(out))
}
