//! Board API keys, on upstream's paths: a person's keys for scripts and the
//! CLI (`Authorization: Bearer pcp_board_...`). The token is shown once; the
//! store keeps its SHA-256.
//!
//! A key may make keys (upstream's CLI logs in that way), but never a wider
//! one: a key made with a key (its child) reaches at most its parent's
//! companies (none named: the parent's; one outside them: 403
//! `deny_key_scope`), expires no later than its parent (a later or absent
//! expiry, or `null`, becomes the parent's), and is revoked with it. A key
//! sees and revokes only itself and the keys made from it; a signed-in
//! session sees and revokes all of its person's keys.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::JsonBody;
use crate::people::{self, BOARD_KEY_PREFIX};
use crate::routes::accounts::too_many;
use crate::AppState;
use paperclip_store::org::board_keys::BoardKey;

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

/// A board API key, never its token. Fields in name order, as the JSON
/// object this replaced serialized them.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct KeyRecord {
    /// Empty: every company of the person.
    company_ids: Vec<String>,
    created_at: String,
    /// `null`: never.
    expires_at: Option<String>,
    id: String,
    last_used_at: Option<String>,
    name: String,
    /// The key this one was made with; `null` when a signed-in session made it.
    parent_key_id: Option<String>,
    revoked_at: Option<String>,
}

impl From<&BoardKey> for KeyRecord {
    fn from(k: &BoardKey) -> KeyRecord {
        KeyRecord {
            company_ids: k.company_ids.clone(),
            created_at: k.created_at.clone(),
            expires_at: k.expires_at.clone(),
            id: k.id.clone(),
            last_used_at: k.last_used_at.clone(),
            name: k.name.clone(),
            parent_key_id: k.parent_key_id.clone(),
            revoked_at: k.revoked_at.clone(),
        }
    }
}

/// A key as created: the only answer that carries its token. `token` sorts
/// after every field of the key, so flattening keeps the name order.
#[derive(Serialize, ToSchema)]
struct CreatedKey {
    #[serde(flatten)]
    key: KeyRecord,
    token: String,
}

/// The earlier of two stored times (RFC 3339); `None` is never.
fn earliest(a: Option<String>, b: Option<&str>) -> Option<String> {
    let at = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
    match (a, b) {
        (None, b) => b.map(str::to_string),
        (a, None) => a,
        (Some(a), Some(b)) => match (at(&a), at(b)) {
            (Some(x), Some(y)) if x <= y => Some(a),
            (Some(_), None) => Some(a),
            _ => Some(b.to_string()),
        },
    }
}

/// The keys of `all` that `root` reaches: itself and the keys made from it,
/// and theirs.
fn subtree<'a>(all: &'a [BoardKey], root: &str) -> Vec<&'a BoardKey> {
    let mut ids = vec![root.to_string()];
    let mut i = 0;
    while i < ids.len() {
        let parent = ids[i].clone();
        ids.extend(
            all.iter()
                .filter(|k| k.parent_key_id.as_deref() == Some(parent.as_str()))
                .map(|k| k.id.clone()),
        );
        i += 1;
    }
    all.iter().filter(|k| ids.contains(&k.id)).collect()
}

/// Board API keys belong to a person: the signed-in one, or in local trusted
/// mode the local board's person (`local-board`), as upstream.
async fn person(app: &AppState, caller: &Caller) -> ApiResult<crate::auth::Person> {
    if caller.agent_id().is_some() {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Board authentication required: board API keys belong to a person",
        ));
    }
    crate::signin::board_person(app, caller).await
}

#[utoipa::path(post, path = "/api/board-api-keys", tag = "auth", request_body = NewKey,
    responses((status = 201, description = "The key with its token, once", body = CreatedKey),
        (status = 400, description = "Invalid name, companies or expiry", body = ErrorBody),
        (status = 401, description = "Board authentication required", body = ErrorBody),
        (status = 403, description = "A company the person is not a member of, or outside the calling key's companies", body = ErrorBody),
        (status = 429, description = "Too many keys", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn create_key(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewKey>,
) -> ApiResult<(StatusCode, Json<CreatedKey>)> {
    let who = person(&app, &caller).await?;
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
    // A key makes no key wider than itself: within its companies.
    let parent = who.key.as_ref();
    if let Some(parent) = parent.filter(|p| !p.company_ids.is_empty()) {
        if companies.is_empty() {
            companies = parent.company_ids.clone();
        }
        if let Some(outside) = companies.iter().find(|c| !parent.company_ids.contains(c)) {
            return Err(ApiError::forbidden(
                "This API key is not scoped to this company: a key it makes cannot be either",
            )
            .with_details(json!({ "reason": "deny_key_scope", "companyId": outside })));
        }
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
        None => Some(crate::routes::invites::expiry(DEFAULT_TTL)),
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
    // ... and never outliving it: no expiry, or a later one, becomes the
    // parent's (the child is refused once the parent ends in any case).
    let expires = match parent {
        Some(parent) => earliest(expires, parent.expires_at.as_deref()),
        None => expires,
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
    let key = paperclip_store::org::board_keys::create(
        &app.store,
        caller.actor(),
        name,
        &people::hash_token(&token),
        &companies,
        expires.as_deref(),
        parent.map(|p| p.id.as_str()),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            key: KeyRecord::from(&key),
            token,
        }),
    ))
}

#[utoipa::path(get, path = "/api/board-api-keys", tag = "auth",
    responses((status = 200, description = "The person's keys, without tokens (with a key: itself and the keys made from it)", body = [KeyRecord]),
        (status = 401, description = "Board authentication required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn list_keys(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<KeyRecord>>> {
    let who = person(&app, &caller).await?;
    let keys = paperclip_store::org::board_keys::list(&app.store, &who.user.id).await?;
    let seen: Vec<&BoardKey> = match &who.key {
        Some(key) => subtree(&keys, &key.id),
        None => keys.iter().collect(),
    };
    Ok(Json(seen.into_iter().map(KeyRecord::from).collect()))
}

#[utoipa::path(delete, path = "/api/board-api-keys/{keyId}", tag = "auth",
    params(("keyId" = String, Path)),
    responses((status = 200, description = "Revoked", body = RevokedKey),
        (status = 401, description = "Board authentication required", body = ErrorBody),
        (status = 404, description = "Not one of the person's keys", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn revoke_key(
    State(app): State<AppState>,
    caller: Caller,
    Path(key_id): Path<String>,
) -> ApiResult<Json<RevokedKey>> {
    let who = person(&app, &caller).await?;
    // A key revokes itself and the keys made from it, not its parent or
    // siblings (a leaked key cannot end the person's other keys).
    if let Some(own) = &who.key {
        let keys = paperclip_store::org::board_keys::list(&app.store, &who.user.id).await?;
        if !subtree(&keys, &own.id).iter().any(|k| k.id == key_id) {
            return Err(ApiError::new(StatusCode::NOT_FOUND, "API key not found"));
        }
    }
    let key = paperclip_store::org::board_keys::revoke(&app.store, caller.actor(), &key_id).await?;
    Ok(Json(RevokedKey {
        key_id: key.id,
        ok: true,
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RevokedKey {
    key_id: String,
    ok: bool,
}
