use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::actor::ActivityActorType;
use paperclip_core::model::ActivityEntry;
use paperclip_store::audit::activity;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::extract::{parse_limit, QueryParams};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(company_activity, create_activity))
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
#[paperclip_macros::handler]
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
#[paperclip_macros::handler]
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

/// Upstream's body for a hand-written activity entry.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewActivity {
    /// Default `system`.
    actor_type: Option<ActivityActorType>,
    actor_id: String,
    action: String,
    entity_type: String,
    entity_id: String,
    /// An agent of the company the entry concerns.
    agent_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    details: Option<Map<String, Value>>,
}

/// Writes an activity entry as given (board only, as upstream).
#[utoipa::path(post, path = "/api/companies/{companyId}/activity", tag = "activity",
    params(("companyId" = String, Path)), request_body = NewActivity,
    responses((status = 201, body = ActivityEntry), (status = 400, description = "A field is empty or too long", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody), (status = 404, description = "Company or agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_activity(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<NewActivity>,
) -> ApiResult<(StatusCode, Json<ActivityEntry>)> {
    caller.require_board()?;
    caller.ensure_company(&company_id)?;
    for (field, value, max) in [
        ("actorId", &input.actor_id, 200),
        ("action", &input.action, 200),
        ("entityType", &input.entity_type, 200),
        ("entityId", &input.entity_id, 200),
    ] {
        let n = value.chars().take(max + 1).count();
        if n == 0 || n > max {
            return Err(ApiError::validation(json!([{
                "code": if n == 0 { "too_small" } else { "too_big" },
                "path": [field],
                "message": format!("{field} must be 1 to {max} characters"),
            }])));
        }
    }
    let details = Value::Object(input.details.unwrap_or_default());
    if details.to_string().len() > 64 * 1024 {
        return Err(ApiError::validation(json!([{
            "code": "too_big", "path": ["details"], "message": "details must be at most 64 KiB of JSON",
        }])));
    }
    let actor_type = input
        .actor_type
        .unwrap_or(ActivityActorType::System)
        .as_str()
        .to_string();
    let row = ActivityEntry {
        id: paperclip_store::new_id(),
        company_id,
        responsible_user_id: ActivityEntry::responsible_of(&actor_type, &input.actor_id),
        actor_type,
        actor_id: input.actor_id,
        action: input.action,
        entity_type: input.entity_type,
        entity_id: input.entity_id,
        agent_id: input.agent_id,
        run_id: None,
        details,
        created_at: paperclip_store::now(),
    };
    Ok((
        StatusCode::CREATED,
        Json(paperclip_store::views::activity_feed::create(&app.store, row).await?),
    ))
}
