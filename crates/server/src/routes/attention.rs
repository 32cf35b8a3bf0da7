//! `GET /api/companies/:id/attention`: upstream's feed of what waits for a
//! person (the board only), built in `store::views::attention`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_store::views::attention::{self, Query};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(feed))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct FeedQuery {
    include_dismissed: Option<String>,
    archived: Option<String>,
    /// `true`: every item in one answer (no cursor, no limit).
    all: Option<String>,
    activity_since: Option<String>,
    activity_until: Option<String>,
    queue: Option<String>,
    cursor: Option<String>,
    /// `activity` (default) or `decide`.
    sort: Option<String>,
    /// 1 to 100 (default 50).
    limit: Option<String>,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, message)
}

/// A present query value must be non-empty, as upstream requires.
fn text(value: Option<String>, field: &str) -> ApiResult<Option<String>> {
    match value {
        Some(v) if v.trim().is_empty() => Err(bad(format!("{field} must be a non-empty string"))),
        other => Ok(other.map(|v| v.trim().to_string())),
    }
}

#[utoipa::path(get, path = "/api/companies/{companyId}/attention", tag = "attention",
    params(("companyId" = String, Path), FeedQuery),
    responses((status = 200, body = Object), (status = 400, description = "A bad filter", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn feed(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<FeedQuery>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let _ = q.include_dismissed;
    let sort = text(q.sort, "sort")?;
    if sort
        .as_deref()
        .is_some_and(|s| s != "activity" && s != "decide")
    {
        return Err(bad("sort must be 'activity' or 'decide'"));
    }
    let limit = match text(q.limit, "limit")? {
        None => None,
        Some(l) => Some(
            l.parse::<i64>()
                .map_err(|_| bad("limit must be an integer"))?,
        ),
    };
    if limit.is_some_and(|l| !(1..=100).contains(&l)) {
        return Err(bad("limit must be an integer between 1 and 100"));
    }
    let all = q.all.as_deref() == Some("true");
    let cursor = text(q.cursor, "cursor")?;
    if all && (cursor.is_some() || limit.is_some()) {
        return Err(bad("all cannot be combined with cursor or limit"));
    }
    let query = Query {
        all,
        archived: q.archived.as_deref() == Some("true"),
        activity_since: text(q.activity_since, "activitySince")?,
        activity_until: text(q.activity_until, "activityUntil")?,
        queue: text(q.queue, "queue")?,
        cursor,
        limit,
    };
    Ok(Json(
        attention::feed(&app.store, &company_id, &query).await?,
    ))
}
