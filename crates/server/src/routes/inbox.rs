//! Inbox dismissals (upstream's `inbox-dismissals`): a person hides an inbox
//! item (`run:<id>`, `approval:<id>`, ...) or snoozes it until a time, and can
//! bring it back. Kept per caller: the board user, or an agent for its own
//! inbox.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_store::views::inbox::{self, Dismissal, Kind};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, dismiss))
        .routes(routes!(restore))
        .routes(routes!(sidebar_badges))
}

/// Upstream's sidebar counts. Join requests belong to authenticated
/// deployments, which we do not have yet, so that key is left out.
#[derive(Debug, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SidebarBadges {
    /// Everything below that needs the caller.
    inbox: i64,
    approvals: i64,
    failed_runs: i64,
}

/// What needs the caller's attention, as the board's sidebar counts it:
/// approvals awaiting a decision and failed runs not yet dealt with, less
/// what the caller dismissed or snoozed.
#[utoipa::path(get, path = "/api/companies/{companyId}/sidebar-badges", tag = "inbox",
    params(("companyId" = String, Path)), responses((status = 200, body = SidebarBadges)))]
#[paperclip_macros::handler]
async fn sidebar_badges(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<SidebarBadges>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let user = &caller.actor().id;
    let approvals = inbox::open_approvals(&app.store, &company_id, user).await?;
    let failed_runs = inbox::failed_runs(&app.store, &company_id, user, false)
        .await?
        .len() as i64;
    Ok(Json(SidebarBadges {
        inbox: approvals + failed_runs,
        approvals,
        failed_runs,
    }))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NewDismissal {
    item_key: String,
    kind: Option<String>,
    snoozed_until: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/inbox-dismissals", tag = "inbox",
    params(("companyId" = String, Path)), responses((status = 200, body = [Dismissal])))]
#[paperclip_macros::handler]
async fn list(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<Dismissal>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(
        inbox::list(&app.store, &company_id, &caller.actor().id).await?,
    ))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/inbox-dismissals", tag = "inbox",
    params(("companyId" = String, Path)), request_body = NewDismissal,
    responses((status = 201, body = Dismissal), (status = 400, description = "Invalid item key, kind or time", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn dismiss(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<NewDismissal>,
) -> ApiResult<(StatusCode, Json<Dismissal>)> {
    access::company_scope(&app, &caller, &company_id).await?;
    let kind = match input.kind.as_deref() {
        None => Kind::Dismiss,
        Some(k) => Kind::parse(k).ok_or_else(|| {
            ApiError::validation(json!([{
                "code": "invalid_enum_value", "path": ["kind"], "options": ["dismiss", "snooze"],
                "message": format!("Invalid kind {k:?}"),
            }]))
        })?,
    };
    let until = match input.snoozed_until.as_deref() {
        None => None,
        Some(t) => Some(
            chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| {
                    ApiError::validation(json!([{
                        "code": "invalid_string", "path": ["snoozedUntil"],
                        "message": "snoozedUntil must be an ISO 8601 time",
                    }]))
                })?
                .with_timezone(&chrono::Utc),
        ),
    };
    let actor = caller.actor();
    let made = inbox::dismiss(
        &app.store,
        actor,
        &company_id,
        &actor.id,
        &input.item_key,
        kind,
        until,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(made)))
}

#[utoipa::path(delete, path = "/api/companies/{companyId}/inbox-dismissals/{itemKey}", tag = "inbox",
    params(("companyId" = String, Path), ("itemKey" = String, Path)),
    responses((status = 204, description = "Restored"), (status = 404, description = "Not dismissed", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn restore(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, item_key)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    access::company_scope(&app, &caller, &company_id).await?;
    let actor = caller.actor();
    inbox::restore(&app.store, actor, &company_id, &actor.id, &item_key).await?;
    Ok(StatusCode::NO_CONTENT)
}
