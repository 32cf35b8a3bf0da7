use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::model::ActivityEntry;
use paperclip_store::activity;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{parse_limit, QueryParams};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(company_activity))
        .routes(routes!(issue_activity))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ActivityQuery {
    entity_type: Option<String>,
    entity_id: Option<String>,
    action: Option<String>,
    actor_type: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// Entries older than this activity id: pass the last id of the previous page.
    before: Option<String>,
    limit: Option<String>,
}

/// Newest first, 100 per page by default (at most 1000).
#[utoipa::path(get, path = "/api/companies/{companyId}/activity", tag = "activity",
    params(("companyId" = String, Path), ActivityQuery), responses((status = 200, body = [ActivityEntry])))]
async fn company_activity(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(query): QueryParams<ActivityQuery>,
) -> ApiResult<Json<Vec<ActivityEntry>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let filter = activity::Filter {
        entity_type: query.entity_type,
        entity_id: query.entity_id,
        action: query.action,
        actor_type: query.actor_type,
        agent_id: query.agent_id,
        run_id: query.run_id,
        before: query.before,
        limit: parse_limit(query.limit.as_deref(), 100, 1000)?,
    };
    Ok(Json(
        activity::list(&app.store, &company_id, &filter).await?,
    ))
}

#[utoipa::path(get, path = "/api/issues/{id}/activity", tag = "activity",
    params(("id" = String, Path)), responses((status = 200, body = [ActivityEntry])))]
async fn issue_activity(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ActivityEntry>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let filter = activity::Filter {
        entity_type: Some("issue".into()),
        entity_id: Some(issue.id),
        limit: 1000,
        ..activity::Filter::default()
    };
    Ok(Json(
        activity::list(&app.store, &issue.company_id, &filter).await?,
    ))
}
