use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use chrono::Utc;
use paperclip_core::agent::AgentStatus;
use paperclip_core::budget::{BudgetScope, IncidentKind};
use paperclip_core::input::{BudgetPatch, NewCostEvent};
use paperclip_core::model::{Agent, BudgetIncident, Company, CostEvent, Project};
use paperclip_store::money::cost_views::{self, Split, Sums};
use paperclip_store::money::costs::{self, Breakdown, By, Summary, Window};
use paperclip_store::views::dashboard::{self, Dashboard};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::IntoParams;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_limit, JsonBody, QueryParams};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_cost_events, report_cost))
        .routes(routes!(summary))
        .routes(routes!(by_agent))
        .routes(routes!(by_project))
        .routes(routes!(by_model))
        .routes(routes!(by_issue))
        .routes(routes!(company_budget))
        .routes(routes!(agent_budget))
        .routes(routes!(project_budget))
        .routes(routes!(incidents))
        .routes(routes!(get_dashboard))
}

/// A cost report. Agents report their own usage; the board may report for
/// any agent. Without `costCents` the event is stored as unpriced. Crossing
/// 80 % of a budget raises an alert; reaching 100 % stops the work.
#[utoipa::path(post, path = "/api/companies/{companyId}/cost-events", tag = "costs",
    params(("companyId" = String, Path)), request_body = NewCostEvent,
    responses((status = 201, body = CostEvent), (status = 400, description = "Negative or malformed values", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn report_cost(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewCostEvent>,
) -> ApiResult<(StatusCode, Json<CostEvent>)> {
    caller.ensure_company(&company_id)?;
    if let (Some(me), Some(for_agent)) = (caller.agent_id(), input.agent_id.as_deref()) {
        if me != for_agent {
            return Err(ApiError::forbidden("Agents report only their own costs"));
        }
    }
    let recorded = costs::record(&app.store, caller.actor(), &company_id, input, None).await?;
    for incident in &recorded.incidents {
        app.runtime.hub().publish(
            &company_id,
            if incident.kind == IncidentKind::Hard {
                "budget.hard_stop"
            } else {
                "budget.alert"
            },
            "budget_incident",
            &incident.id,
            serde_json::to_value(incident).unwrap_or_default(),
        );
    }
    Ok((StatusCode::CREATED, Json(recorded.event)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct WindowQuery {
    /// A UTC calendar month, `YYYY-MM` (default: the current one).
    month: Option<String>,
    /// Custom range start (RFC 3339), with `to`.
    from: Option<String>,
    /// Custom range end, exclusive (RFC 3339).
    to: Option<String>,
    /// cost-events: events per page (default 500). costs/by-issue: tasks per
    /// page, biggest spend first (default 100, at most 1,000).
    limit: Option<String>,
    /// costs/by-issue: tasks to skip (default 0).
    offset: Option<String>,
}

pub(crate) fn window(q: &WindowQuery) -> ApiResult<Window> {
    let bad = |field: &str, message: &str| {
        ApiError::validation(
            json!([{ "code": "invalid_value", "path": [field], "message": message }]),
        )
    };
    if let Some(month) = &q.month {
        let (start, end) = paperclip_core::budget::window_of_month(month)
            .ok_or_else(|| bad("month", "Expected YYYY-MM"))?;
        return Ok(Window { start, end });
    }
    match (&q.from, &q.to) {
        (None, None) => Ok(Window::month_of(Utc::now())),
        (Some(from), Some(to)) => {
            let parse = |t: &str, f: &str| {
                chrono::DateTime::parse_from_rfc3339(t)
                    .map(|t| paperclip_core::budget::stamp(t.with_timezone(&Utc)))
                    .map_err(|_| bad(f, "Expected an RFC 3339 timestamp"))
            };
            Ok(Window {
                start: parse(from, "from")?,
                end: parse(to, "to")?,
            })
        }
        _ => Err(bad("to", "A custom range needs both from and to")),
    }
}

#[utoipa::path(get, path = "/api/companies/{companyId}/cost-events", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [CostEvent])))]
#[paperclip_macros::handler]
async fn list_cost_events(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<CostEvent>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let limit = parse_limit(q.limit.as_deref(), 500, 5000)?;
    Ok(Json(
        costs::list(&app.store, &company_id, &window(&q)?, limit).await?,
    ))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/costs/summary", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = Summary)))]
#[paperclip_macros::handler]
async fn summary(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Summary>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(
        costs::summary(&app.store, &company_id, &window(&q)?).await?,
    ))
}

async fn breakdown(
    app: &AppState,
    caller: &Caller,
    company_id: &str,
    by: By,
    q: &WindowQuery,
) -> ApiResult<Json<Vec<Breakdown>>> {
    access::company_scope(app, caller, company_id).await?;
    Ok(Json(
        costs::breakdown(&app.store, company_id, by, &window(q)?).await?,
    ))
}

/// Spend per agent, biggest first: upstream's row (`agentId`, `agentName`,
/// `agentStatus`, sums), with our event counts. Events without an agent are
/// one row with a null `agentId`.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-agent", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [AgentCost])))]
#[paperclip_macros::handler]
async fn by_agent(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<AgentCost>>> {
    let Json(rows) = breakdown(&app, &caller, &c, By::Agent, &q).await?;
    let mut splits = cost_views::split_by_agent(&app.store, &c, &window(&q)?).await?;
    let statuses: std::collections::HashMap<String, AgentStatus> =
        paperclip_store::org::agents::list(&app.store, &c)
            .await?
            .into_iter()
            .map(|a| (a.id, a.status))
            .collect();
    Ok(Json(
        rows.into_iter()
            .map(|r| AgentCost {
                sums: Sums::from(&r),
                split: splits.remove(&r.key).unwrap_or_default(),
                agent_status: r.key.as_ref().and_then(|k| statuses.get(k).copied()),
                agent_id: r.key,
                agent_name: r.label,
                event_count: r.event_count,
                unpriced_event_count: r.unpriced_event_count,
            })
            .collect(),
    ))
}

/// Spend per project, biggest first: upstream's row (`projectId`,
/// `projectName`, sums), with our event counts. Events without a project are
/// left out, as upstream does.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-project", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [ProjectCost])))]
#[paperclip_macros::handler]
async fn by_project(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<ProjectCost>>> {
    let Json(rows) = breakdown(&app, &caller, &c, By::Project, &q).await?;
    Ok(Json(
        rows.into_iter()
            .map(|r| ProjectCost {
                sums: Sums::from(&r),
                project_id: r.key,
                project_name: r.label,
                event_count: r.event_count,
                unpriced_event_count: r.unpriced_event_count,
            })
            .collect(),
    ))
}

/// One row of `costs/by-agent`, with upstream's runs and tokens split by
/// who pays.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCost {
    agent_id: Option<String>,
    agent_name: Option<String>,
    agent_status: Option<AgentStatus>,
    #[serde(flatten)]
    sums: Sums,
    #[serde(flatten)]
    split: Split,
    /// Events in the window (ours).
    event_count: i64,
    /// Events reported without a price (ours).
    unpriced_event_count: i64,
}

/// One row of `costs/by-project`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectCost {
    project_id: Option<String>,
    project_name: Option<String>,
    #[serde(flatten)]
    sums: Sums,
    /// Events in the window (ours).
    event_count: i64,
    /// Events reported without a price (ours).
    unpriced_event_count: i64,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-model", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [Breakdown])))]
#[paperclip_macros::handler]
async fn by_model(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<Breakdown>>> {
    breakdown(&app, &caller, &c, By::Model, &q).await
}

/// Spend per task, biggest first, one page at a time (ours: upstream has no
/// such route). A company of a million tasks has too many for one answer.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-issue", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [Breakdown])))]
#[paperclip_macros::handler]
async fn by_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<Breakdown>>> {
    access::company_scope(&app, &caller, &c).await?;
    let limit = parse_limit(q.limit.as_deref(), 100, 1000)?;
    let offset = match q.offset.as_deref() {
        None | Some("") => 0,
        Some(s) => s.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::validation(json!([{
                "code": "invalid_value",
                "path": ["offset"],
                "message": "offset must be a non-negative integer",
            }]))
        })?,
    };
    Ok(Json(
        costs::top(
            &app.store,
            &c,
            By::Issue,
            &window(&q)?,
            Some((limit, offset)),
        )
        .await?,
    ))
}

/// Sets the company's monthly budget (board only). Raising it above this
/// month's spend lifts a hard stop and resumes the agents it paused.
#[utoipa::path(patch, path = "/api/companies/{companyId}/budgets", tag = "costs",
    params(("companyId" = String, Path)), request_body = BudgetPatch,
    responses((status = 200, body = Company), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn company_budget(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(patch): JsonBody<BudgetPatch>,
) -> ApiResult<Json<Company>> {
    let actor = caller.require_board()?;
    paperclip_store::money::budget_changes::set(
        &app.store,
        actor,
        BudgetScope::Company,
        &company_id,
        i64::from(patch.budget_monthly_cents),
        Utc::now(),
    )
    .await?;
    Ok(Json(
        paperclip_store::org::companies::get(&app.store, &company_id).await?,
    ))
}

/// Sets an agent's monthly budget: the board, or a manager for an agent in
/// its reporting subtree.
#[utoipa::path(patch, path = "/api/agents/{agentId}/budgets", tag = "costs",
    params(("agentId" = String, Path)), request_body = BudgetPatch,
    responses((status = 200, body = crate::agent_view::AgentView), (status = 403, description = "Not the board or a manager of this agent", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn agent_budget(
    State(app): State<AppState>,
    caller: Caller,
    Path(agent_id): Path<String>,
    JsonBody(patch): JsonBody<BudgetPatch>,
) -> ApiResult<Json<crate::agent_view::AgentView>> {
    let agent = access::agent(&app, &caller, &agent_id).await?;
    if let Some(me) = caller.agent_id() {
        if !manages(&app, me, &agent).await? {
            return Err(ApiError::forbidden(
                "Agents may set budgets only for their own reports",
            ));
        }
    }
    paperclip_store::money::budget_changes::set(
        &app.store,
        caller.actor(),
        BudgetScope::Agent,
        &agent_id,
        i64::from(patch.budget_monthly_cents),
        Utc::now(),
    )
    .await?;
    let agent = paperclip_store::org::agents::get(&app.store, &agent_id).await?;
    Ok(Json(crate::agent_view::one(&app, agent).await?))
}

/// Whether `manager` is above `agent` in the reporting tree.
async fn manages(app: &AppState, manager: &str, agent: &Agent) -> ApiResult<bool> {
    let mut cursor = agent.reports_to.clone();
    let mut steps = 0;
    while let Some(id) = cursor {
        if id == manager {
            return Ok(true);
        }
        steps += 1;
        if steps > 64 {
            break;
        }
        cursor = paperclip_store::org::agents::get(&app.store, &id)
            .await?
            .reports_to;
    }
    Ok(false)
}

#[utoipa::path(patch, path = "/api/projects/{projectId}/budgets", tag = "costs",
    params(("projectId" = String, Path)), request_body = BudgetPatch,
    responses((status = 200, body = Project), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn project_budget(
    State(app): State<AppState>,
    caller: Caller,
    Path(project_id): Path<String>,
    JsonBody(patch): JsonBody<BudgetPatch>,
) -> ApiResult<Json<Project>> {
    let actor = caller.require_board()?;
    paperclip_store::money::budget_changes::set(
        &app.store,
        actor,
        BudgetScope::Project,
        &project_id,
        i64::from(patch.budget_monthly_cents),
        Utc::now(),
    )
    .await?;
    Ok(Json(
        paperclip_store::org::projects::get(&app.store, &project_id).await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct IncidentQuery {
    /// `open` or `resolved`.
    status: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/budget-incidents", tag = "costs",
    params(("companyId" = String, Path), IncidentQuery), responses((status = 200, body = [BudgetIncident])))]
#[paperclip_macros::handler]
async fn incidents(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<IncidentQuery>,
) -> ApiResult<Json<Vec<BudgetIncident>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(
        paperclip_store::money::budgets::incidents(&app.store, &company_id, q.status.as_deref())
            .await?,
    ))
}

/// Counts by status, month-to-date spend against the budget, pending
/// approvals, open budget incidents, recent runs and activity.
#[utoipa::path(get, path = "/api/companies/{companyId}/dashboard", tag = "costs",
    params(("companyId" = String, Path)), responses((status = 200, body = Dashboard)))]
#[paperclip_macros::handler]
async fn get_dashboard(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Dashboard>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(
        dashboard::get(&app.store, &company_id, Utc::now()).await?,
    ))
}
