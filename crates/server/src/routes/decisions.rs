//! Decisions on upstream's routes: an agent's issue-scoped run asks
//! (`POST /api/companies/:id/decisions`, `.../decision-bundles`), the board
//! answers (`/api/decisions/:id/decide|dismiss`), the origin agent may
//! withdraw (`/cancel`) and read its own; the board lists them and anyone
//! in the company reads the per-rule statistics (an agent only its own).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::decision::{Decide, DecisionStatus, Dismiss, NewBundle, NewDecision};
use paperclip_core::stored::Stored;
use paperclip_store::decisions::{self, ListFilter, Origin};
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
        .routes(routes!(create_decision, list_decisions))
        .routes(routes!(create_bundle))
        .routes(routes!(decision_stats))
        .routes(routes!(get_decision))
        .routes(routes!(decide))
        .routes(routes!(dismiss))
        .routes(routes!(cancel))
}

/// The calling agent and its run, as upstream requires for a decision's
/// provenance; anyone else (the board, an agent without a run) gets 403.
fn agent_run(caller: &Caller) -> ApiResult<(&str, &str)> {
    match (caller.agent_id(), caller.actor().run_id.as_deref()) {
        (Some(agent), Some(run)) => Ok((agent, run)),
        _ => Err(ApiError::forbidden("Agent run context required")),
    }
}

/// Upstream answers the open-decision cap with 429.
fn capped(err: paperclip_store::Error) -> ApiError {
    let api = ApiError::from(err);
    match &api.details {
        Some(d) if d["code"] == "decision_open_cap" => {
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, api.message.clone())
        }
        _ => api,
    }
}

async fn decision_for(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Value> {
    let decision = decisions::get(&app.store, id).await?;
    let company = decision["companyId"].as_str().unwrap_or_default();
    if !caller.sees_company(company) {
        return Err(ApiError::not_found("Decision not found"));
    }
    caller.ensure_company(company)?;
    Ok(decision)
}

#[utoipa::path(post, path = "/api/companies/{companyId}/decisions", tag = "decisions",
    params(("companyId" = String, Path)), request_body = NewDecision,
    responses((status = 201, body = Object), (status = 403, description = "Agent run context required", body = crate::error::ErrorBody),
        (status = 409, description = "Idempotency key reused with another payload", body = crate::error::ErrorBody),
        (status = 422, description = "A referenced issue is not in the company, or the run is on no issue", body = crate::error::ErrorBody),
        (status = 429, description = "Open decision cap reached", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_decision(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewDecision>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.ensure_company(&company_id)?;
    let (agent_id, run_id) = agent_run(&caller)?;
    input
        .rules(&[])
        .map_err(|issue| ApiError::validation(json!([issue])))?;
    let origin = Origin {
        company_id: &company_id,
        agent_id,
        run_id,
    };
    let created = decisions::create(&app.store, caller.actor(), origin, input)
        .await
        .map_err(capped)?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/decision-bundles", tag = "decisions",
    params(("companyId" = String, Path)), request_body = NewBundle,
    responses((status = 201, body = Object), (status = 403, description = "Agent run context required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_bundle(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewBundle>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller.ensure_company(&company_id)?;
    let (agent_id, run_id) = agent_run(&caller)?;
    input
        .rules()
        .map_err(|issue| ApiError::validation(json!([issue])))?;
    let origin = Origin {
        company_id: &company_id,
        agent_id,
        run_id,
    };
    let created = decisions::create_bundle(&app.store, caller.actor(), origin, input)
        .await
        .map_err(capped)?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    /// `open`, `decided`, `expired` or `cancelled`.
    status: Option<String>,
    bundle_id: Option<String>,
    target_issue_id: Option<String>,
    origin_agent_id: Option<String>,
    /// 1 to 100 (default 50).
    limit: Option<String>,
}

fn bad_filter(field: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "Invalid decision filters")
        .with_details(json!({ "fieldErrors": { field: [message] }, "formErrors": [] }))
}

fn uuid_filter(field: &str, value: Option<String>) -> ApiResult<Option<String>> {
    match value {
        Some(v) if paperclip_core::decision::uuid_like(&v).is_none() => {
            Err(bad_filter(field, "Invalid uuid"))
        }
        other => Ok(other),
    }
}

#[utoipa::path(get, path = "/api/companies/{companyId}/decisions", tag = "decisions",
    params(("companyId" = String, Path), ListQuery), responses((status = 200, body = [Object])))]
#[paperclip_macros::handler]
async fn list_decisions(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> ApiResult<Json<Vec<Value>>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(
            DecisionStatus::from_stored(s)
                .ok_or_else(|| bad_filter("status", "Invalid enum value"))?,
        ),
    };
    let limit = match q.limit.as_deref() {
        None => None,
        Some(l) => match l.parse::<i64>() {
            Ok(n) if (1..=100).contains(&n) => Some(n),
            _ => return Err(bad_filter("limit", "Must be an integer from 1 to 100")),
        },
    };
    let filter = ListFilter {
        status,
        bundle_id: uuid_filter("bundleId", q.bundle_id)?,
        target_issue_id: uuid_filter("targetIssueId", q.target_issue_id)?,
        origin_agent_id: uuid_filter("originAgentId", q.origin_agent_id)?,
        limit,
    };
    Ok(Json(
        decisions::list(&app.store, &company_id, &filter).await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StatsQuery {
    /// Only `ruleKey`.
    group_by: Option<String>,
    origin_agent_id: Option<String>,
    /// ISO-8601: decisions made since then.
    since: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/decisions/stats", tag = "decisions",
    params(("companyId" = String, Path), StatsQuery), responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn decision_stats(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<StatsQuery>,
) -> ApiResult<Json<Value>> {
    access::company_scope(&app, &caller, &company_id).await?;
    if q.group_by.as_deref() != Some("ruleKey") {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "Invalid decision stats filters")
            .with_details(json!({ "fieldErrors": { "groupBy": ["Invalid literal value, expected \"ruleKey\""] }, "formErrors": [] })));
    }
    let origin = uuid_filter("originAgentId", q.origin_agent_id)?;
    let since = match q.since {
        Some(s) => Some(
            chrono::DateTime::parse_from_rfc3339(&s)
                .map_err(|_| bad_filter("since", "Invalid date"))?
                .with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string(),
        ),
        None => None,
    };
    let origin = match caller.agent_id() {
        Some(me) if origin.as_deref().is_some_and(|o| o != me) => {
            return Err(ApiError::forbidden(
                "Agents may only read their own decision stats",
            ));
        }
        Some(me) => Some(me.to_string()),
        None => origin,
    };
    Ok(Json(
        decisions::stats(&app.store, &company_id, origin.as_deref(), since.as_deref()).await?,
    ))
}

#[utoipa::path(get, path = "/api/decisions/{id}", tag = "decisions",
    params(("id" = String, Path)), responses((status = 200, body = Object), (status = 404, description = "Decision not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_decision(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let decision = decision_for(&app, &caller, &id).await?;
    if let Some(me) = caller.agent_id() {
        if decision["originAgentId"].as_str() != Some(me) {
            return Err(ApiError::forbidden(
                "Only the origin agent may read this decision",
            ));
        }
    }
    Ok(Json(decisions::outcome(&app.store, &id).await?))
}

#[utoipa::path(post, path = "/api/decisions/{id}/decide", tag = "decisions",
    params(("id" = String, Path)), request_body = Decide,
    responses((status = 200, body = Object), (status = 403, description = "Board access required", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved or expired", body = crate::error::ErrorBody),
        (status = 422, description = "Unknown option or a missing input", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn decide(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<Decide>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?;
    decision_for(&app, &caller, &id).await?;
    Ok(Json(
        decisions::decide(&app.store, actor, &id, input).await?,
    ))
}

#[utoipa::path(post, path = "/api/decisions/{id}/dismiss", tag = "decisions",
    params(("id" = String, Path)), request_body = Dismiss, responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn dismiss(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<Dismiss>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?;
    decision_for(&app, &caller, &id).await?;
    Ok(Json(
        decisions::dismiss(&app.store, actor, &id, input.reason).await?,
    ))
}

#[utoipa::path(post, path = "/api/decisions/{id}/cancel", tag = "decisions",
    params(("id" = String, Path)), responses((status = 200, body = Object), (status = 403, description = "Only the origin agent may cancel", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn cancel(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let decision = decision_for(&app, &caller, &id).await?;
    if let Some(me) = caller.agent_id() {
        if decision["originAgentId"].as_str() != Some(me) {
            return Err(ApiError::forbidden("Only the origin agent may cancel"));
        }
    }
    Ok(Json(
        decisions::cancel(&app.store, caller.actor(), &id).await?,
    ))
}
