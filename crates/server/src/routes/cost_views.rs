//! Upstream's finer cost views: per agent and model, per provider, rolling
//! windows, and a task tree's cost. Read access as for the other rollups.

use axum::extract::{Path, State};
use axum::Json;
use chrono::Utc;
use paperclip_store::money::cost_views::{
    self, AgentModelCost, BillerCost, ProviderCost, TreeCost, WindowSpend,
};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::costs::{window, WindowQuery};
use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(by_agent_model))
        .routes(routes!(by_provider))
        .routes(routes!(by_biller))
        .routes(routes!(window_spend))
        .routes(routes!(issue_cost))
}

/// Spend per agent, provider and model in the window (default: this month).
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-agent-model", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [AgentModelCost])))]
#[paperclip_macros::handler]
async fn by_agent_model(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<AgentModelCost>>> {
    access::company_scope(&app, &caller, &c).await?;
    Ok(Json(
        cost_views::by_agent_model(&app.store, &c, &window(&q)?).await?,
    ))
}

/// Spend per provider and model in the window (default: this month), biggest first.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-provider", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [ProviderCost])))]
#[paperclip_macros::handler]
async fn by_provider(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<ProviderCost>>> {
    access::company_scope(&app, &caller, &c).await?;
    Ok(Json(
        cost_views::by_provider(&app.store, &c, &window(&q)?).await?,
    ))
}

/// Spend per biller in the window (default: this month), biggest first.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/by-biller", tag = "costs",
    params(("companyId" = String, Path), WindowQuery), responses((status = 200, body = [BillerCost])))]
#[paperclip_macros::handler]
async fn by_biller(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
    QueryParams(q): QueryParams<WindowQuery>,
) -> ApiResult<Json<Vec<BillerCost>>> {
    access::company_scope(&app, &caller, &c).await?;
    Ok(Json(
        cost_views::by_biller(&app.store, &c, &window(&q)?).await?,
    ))
}

/// Spend per provider in the last 5 hours, 24 hours and 7 days.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/window-spend", tag = "costs",
    params(("companyId" = String, Path)), responses((status = 200, body = [WindowSpend])))]
#[paperclip_macros::handler]
async fn window_spend(
    State(app): State<AppState>,
    caller: Caller,
    Path(c): Path<String>,
) -> ApiResult<Json<Vec<WindowSpend>>> {
    access::company_scope(&app, &caller, &c).await?;
    Ok(Json(
        cost_views::window_spend(&app.store, &c, Utc::now()).await?,
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct TreeQuery {
    /// `true` or `1`: count only the task's descendants.
    exclude_root: Option<String>,
}

/// What a task and everything below it cost, all time, and how many runs it took.
#[utoipa::path(get, path = "/api/issues/{id}/cost-summary", tag = "costs",
    params(("id" = String, Path, description = "Issue UUID or identifier"), TreeQuery),
    responses((status = 200, body = TreeCost), (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn issue_cost(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<TreeQuery>,
) -> ApiResult<Json<TreeCost>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let exclude_root = match q.exclude_root.as_deref() {
        None | Some("") | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(_) => {
            return Err(ApiError::validation(serde_json::json!([{
                "code": "invalid_value",
                "path": ["excludeRoot"],
                "message": "excludeRoot must be true or false",
            }])))
        }
    };
    Ok(Json(
        cost_views::tree_cost(
            &app.store,
            &issue.company_id,
            &issue.id,
            exclude_root,
            Utc::now(),
        )
        .await?,
    ))
}
