//! Board API keys, on upstream's paths: a person's keys for scripts and the
//! CLI (`Authorization: Bearer pcp_board_...`). The token is shown once; the
//! store keeps its SHA-256.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::people::{self, BOARD_KEY_PREFIX};
use crate::routes::accounts::too_many;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_key, list_keys))
        .routes(routes!(revoke_key))
}

const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
const KEYS_PER_HOUR: usize = 20;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct NewKey {
    name: Option<String>,
    /// `null`: never expires; absent: 30 days.
    #[serde(default, deserialize_with = "some_or_null")]
    expires_at: Option<Option<String>>,
    requested_company_id: Option<String>,
    company_ids: Option<Vec<String>>,
}

fn some_or_null<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Ok(Some(Option::deserialize(d)?))
}

fn key_json(k: &paperclip_store::board_keys::BoardKey) -> Value {
    json!({
        "id": k.id,
        "name": k.name,
        "companyIds": k.company_ids,
        "createdAt": k.created_at,
        "lastUsedAt": k.last_used_at,
        "revokedAt": k.revoked_at,
        "expiresAt": k.expires_at,
    })
}

fn person<'a>(caller: &'a Caller) -> ApiResult<&'a crate::auth::Person> {
    caller.person().ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Board authentication required: board API keys belong to a signed-in person",
        )
    })
}

#[utoipa::path(post, path = "/api/board-api-keys", tag = "auth", request_body = NewKey,
    responses((status = 201, description = "The key with its token, once"),
        (status = 403, description = "A company the person is not a member of"), (status = 429, description = "Too many keys")))]
async fn create_key(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewKey>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let who = person(&caller)?;
    let name = body
        .name
        .as_deref()
        .map(str::trim)
        .unwrap_or("paperclipai cli");
    if name.is_empty() || name.chars().count() > 120 || name.chars().any(char::is_control) {
        return Err(ApiError::validation(
            json!([{ "code": "invalid_string", "path": ["name"],
            "message": "Name must be 1 to 120 characters" }]),
        ));
    }
    let mut companies: Vec<String> = body.company_ids.unwrap_or_default();
    companies.extend(body.requested_company_id);
    companies.sort();
    companies.dedup();
    if companies.len() > 100 {
        return Err(ApiError::validation(
            json!([{ "code": "too_big", "path": ["companyIds"],
            "message": "At most 100 companies" }]),
        ));
    }
    for company in &companies {
        if who.role_in(company).is_none() {
            return Err(
                ApiError::forbidden("User does not have access to this company")
                    .with_details(json!({ "companyId": company })),
            );
        }
    }
    let expires = match body.expires_at {
        None => Some(crate::routes::members::expiry(DEFAULT_TTL)),
        Some(None) => None,
        Some(Some(text)) => {
            let at = chrono::DateTime::parse_from_rfc3339(&text).map_err(|_| {
                ApiError::validation(json!([{ "code": "invalid_date", "path": ["expiresAt"],
                    "message": "expiresAt must be an RFC 3339 time" }]))
            })?;
            if at.to_utc() <= chrono::Utc::now() {
                return Err(ApiError::validation(
                    json!([{ "code": "invalid_date", "path": ["expiresAt"],
                    "message": "expiresAt must be in the future" }]),
                ));
            }
            Some(at.to_utc().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        }
    };
    app.security
        .limiter
        .hit(
            &format!("board-key:{}", who.user.id),
            KEYS_PER_HOUR,
            Duration::from_secs(3600),
        )
        .map_err(|wait| {
            too_many(
                format!("Too many API keys created: try again in {wait} s"),
                wait,
            )
        })?;
    let token = people::new_token(BOARD_KEY_PREFIX);
    let key = paperclip_store::board_keys::create(
        &app.store,
        caller.actor(),
        name,
        &people::hash_token(&token),
        &companies,
        expires.as_deref(),
    )
    .await?;
    let mut body = key_json(&key);
    body["token"] = json!(token);
    Ok((StatusCode::CREATED, Json(body)))
}

#[utoipa::path(get, path = "/api/board-api-keys", tag = "auth",
    responses((status = 200, description = "The person's keys, without tokens")))]
async fn list_keys(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Value>>> {
    let who = person(&caller)?;
    let keys = paperclip_store::board_keys::list(&app.store, &who.user.id).await?;
    Ok(Json(keys.iter().map(key_json).collect()))
}

#[utoipa::path(delete, path = "/api/board-api-keys/{keyId}", tag = "auth",
    params(("keyId" = String, Path)),
    responses((status = 200, description = "Revoked"), (status = 404, description = "Not one of the person's keys")))]
async fn revoke_key(
    State(app): State<AppState>,
    caller: Caller,
    Path(key_id): Path<String>,
) -> ApiResult<Json<Value>> {
    person(&caller)?;
    let key = paperclip_store::board_keys::revoke(&app.store, caller.actor(), &key_id).await?;
    Ok(Json(json!({ "ok": true, "keyId": key.id })))
}
