//! Agent-side secrets on upstream's routes: an agent's proposals
//! (`/api/agents/me/secret-proposals`), the board's decision on them
//! (`/api/companies/:id/secret-proposals/:id/approve|reject`), and a
//! granted secret's value, only to its agent, only with the token of a run
//! that is running, audited and added to that run's redaction set.

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_secret::normalize_key;
use paperclip_core::secret_proposal::{
    valid_config_path, valid_name, GrantedSecret, NewProposal, ProposalKind, ProposalStatus,
    SecretProposal, SecretValue, MAX_JUSTIFICATION, MAX_VALUE_BYTES,
};
use paperclip_core::stored::Stored;
use paperclip_runtime::vault::Vault;
use paperclip_store::org::secret_grants as grants;
use paperclip_store::org::secret_proposals::{self as proposals, Draft};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::{Caller, KEY_PREFIX};
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(propose, my_proposals))
        .routes(routes!(my_proposal, withdraw))
        .routes(routes!(board_proposals))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(my_secrets))
        .routes(routes!(secret_value))
}

#[derive(Serialize, ToSchema)]
struct ProposalList {
    proposals: Vec<SecretProposal>,
    #[serde(rename = "nextOffset")]
    next_offset: Option<i64>,
}

#[derive(Serialize, ToSchema)]
struct GrantList {
    secrets: Vec<GrantedSecret>,
}

#[derive(Deserialize, ToSchema, Default)]
struct Approval {
    cascade: Option<bool>,
}

#[derive(Deserialize, ToSchema, Default)]
struct Rejection {
    reason: Option<String>,
}

#[derive(Deserialize, utoipa::IntoParams)]
struct StatusQuery {
    status: Option<String>,
}

/// The calling agent and its run, when it came with the token of a run that
/// is running (auth refuses a token whose run ended); an agent API key is
/// refused, as upstream refuses long-lived keys here.
fn run_bound<'c>(caller: &'c Caller, headers: &HeaderMap) -> ApiResult<(&'c Actor, String)> {
    let actor = caller.actor();
    let by_key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_whitespace().nth(1))
        .is_some_and(|t| t.starts_with(KEY_PREFIX));
    match (actor.agent_id(), &actor.run_id) {
        (Some(_), Some(run)) if !by_key => Ok((actor, run.clone())),
        _ => Err(
            ApiError::forbidden("Run-bound agent authentication required")
                .with_details(json!({ "reason": "run_token_required" })),
        ),
    }
}

/// A required field that is absent or blank: 400 naming it, as upstream's
/// schema validation answers.
fn missing(field: &str) -> ApiError {
    ApiError::validation(json!([{ "code": "invalid_type", "path": [field],
        "message": format!("{field} is required") }]))
}

fn rule(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

#[utoipa::path(post, path = "/api/agents/me/secret-proposals", tag = "secrets",
    request_body = NewProposal, responses((status = 201, body = SecretProposal),
        (status = 403, description = "Not a run-bound agent"), (status = 422, description = "A rule")))]
#[paperclip_macros::handler]
async fn propose(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ValidJson(body): ValidJson<NewProposal>,
) -> ApiResult<(StatusCode, Json<SecretProposal>)> {
    let (actor, run_id) = run_bound(&caller, &headers)?;
    let justification = body.justification.as_deref().unwrap_or("").trim();
    if justification.is_empty() {
        return Err(missing("justification"));
    }
    if justification.len() > MAX_JUSTIFICATION {
        return Err(rule("Justification must be at most 20000 characters"));
    }
    let kind = match body.kind.as_deref() {
        Some("secret") => ProposalKind::Secret,
        Some("binding") => ProposalKind::Binding,
        None => return Err(missing("kind")),
        _ => return Err(rule("kind must be secret or binding")),
    };
    let seal = Vault::sealer(app.runtime.vault().key().map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The secrets master key is unavailable",
        )
    })?);
    let name = body.name.as_deref().map(str::trim);
    let draft = match kind {
        ProposalKind::Secret => {
            let name = name
                .filter(|n| !n.is_empty())
                .ok_or_else(|| missing("name"))?;
            if !valid_name(name) {
                return Err(rule(
                    "Secret name must be a slash-separated path without empty segments",
                ));
            }
            let value = body
                .value
                .as_deref()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| missing("value"))?;
            if value.len() > MAX_VALUE_BYTES {
                return Err(rule("Secret value must be at most 65536 bytes"));
            }
            let from = body
                .key
                .as_deref()
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| name.rsplit('/').next().unwrap_or(""));
            let key = normalize_key(from);
            if key.is_empty() {
                return Err(rule("Secret key is required"));
            }
            // The value is in this request: the run must never show it.
            app.runtime.redact_in_run(&run_id, value);
            Draft {
                kind,
                name: Some(name),
                key: Some(key),
                description: body
                    .description
                    .as_deref()
                    .map(str::trim)
                    .filter(|d| !d.is_empty()),
                justification,
                value: Some(value),
                secret_id: None,
                secret_proposal_id: None,
                config_path: None,
            }
        }
        ProposalKind::Binding => {
            let sources = [
                &body.secret_id,
                &body.secret_proposal_id,
                &body.source_config_path,
            ];
            if sources.iter().filter(|s| s.is_some()).count() != 1 {
                return Err(ApiError::validation(
                    json!([{ "code": "custom", "path": ["secretId"],
                    "message": "Binding proposals require exactly one of secretId, sourceConfigPath, or secretProposalId" }]),
                ));
            }
            if body.source_config_path.is_some() {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "Source secret binding not found",
                ));
            }
            let path = body.config_path.as_deref().unwrap_or("");
            if !valid_config_path(path) {
                return Err(rule("configPath must use env.<KEY> or access.<ALIAS>"));
            }
            if body
                .target_agent_id
                .as_deref()
                .is_some_and(|t| Some(t) != actor.agent_id())
            {
                return Err(ApiError::forbidden(
                    "Binding proposals may target only the proposing agent or its reports",
                ));
            }
            Draft {
                kind,
                name: None,
                key: None,
                description: None,
                justification,
                value: None,
                secret_id: body.secret_id.as_deref(),
                secret_proposal_id: body.secret_proposal_id.as_deref(),
                config_path: Some(path),
            }
        }
    };
    let created = proposals::create(&app.store, actor, &run_id, draft, &seal).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/agents/me/secret-proposals", tag = "secrets",
    responses((status = 200, body = ProposalList)))]
#[paperclip_macros::handler]
async fn my_proposals(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Json<ProposalList>> {
    let (actor, _) = run_bound(&caller, &headers)?;
    let company = actor.company_id.clone().unwrap_or_default();
    let list = proposals::list_for_agent(&app.store, &company, &actor.id).await?;
    Ok(Json(ProposalList {
        proposals: list,
        next_offset: None,
    }))
}

#[utoipa::path(get, path = "/api/agents/me/secret-proposals/{id}", tag = "secrets",
    params(("id" = String, Path)), responses((status = 200, body = SecretProposal), (status = 404, description = "Not found")))]
#[paperclip_macros::handler]
async fn my_proposal(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult<Json<SecretProposal>> {
    let (actor, _) = run_bound(&caller, &headers)?;
    let company = actor.company_id.clone().unwrap_or_default();
    let p = proposals::get(&app.store, &company, &id).await?;
    if p.proposed_by_agent_id != actor.id && p.target_id.as_deref() != Some(actor.id.as_str()) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "Secret proposal not found",
        ));
    }
    Ok(Json(p))
}

#[utoipa::path(delete, path = "/api/agents/me/secret-proposals/{id}", tag = "secrets",
    params(("id" = String, Path)), responses((status = 200, body = SecretProposal), (status = 409, description = "Not pending")))]
#[paperclip_macros::handler]
async fn withdraw(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> ApiResult<Json<SecretProposal>> {
    let (actor, _) = run_bound(&caller, &headers)?;
    let company = actor.company_id.clone().unwrap_or_default();
    Ok(Json(
        proposals::withdraw(&app.store, actor, &company, &id).await?,
    ))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/secret-proposals", tag = "secrets",
    params(("companyId" = String, Path), StatusQuery), responses((status = 200, body = [SecretProposal])))]
#[paperclip_macros::handler]
async fn board_proposals(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    Query(q): Query<StatusQuery>,
) -> ApiResult<Json<Vec<SecretProposal>>> {
    access::secrets_admin(&caller, &company_id)?;
    let status = match q.status.as_deref() {
        None => None,
        Some(s) => Some(ProposalStatus::from_stored(s).ok_or_else(|| ApiError::validation(json!([{
            "code": "invalid_enum_value", "path": ["status"], "message": format!("Unknown status: {s}") }])))?),
    };
    paperclip_store::org::companies::exists(&app.store, &company_id).await?;
    Ok(Json(
        proposals::list_for_board(&app.store, &company_id, status).await?,
    ))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/secret-proposals/{id}/approve", tag = "secrets",
    params(("companyId" = String, Path), ("id" = String, Path)), request_body = Approval,
    responses((status = 200, body = SecretProposal), (status = 404, description = "Not found"), (status = 409, description = "Not pending")))]
#[paperclip_macros::handler]
async fn approve(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<SecretProposal>> {
    let actor = access::secrets_admin(&caller, &company_id)?;
    // Upstream's approve takes an optional body (`cascade`).
    let body: Approval = if body.iter().all(u8::is_ascii_whitespace) {
        Approval::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::validation(json!([{
            "code": "invalid_type", "path": ["cascade"], "message": e.to_string() }]))
        })?
    };
    let cascade = body.cascade.unwrap_or(false);
    let vault = app.runtime.vault();
    let seal = Vault::sealer(vault.key().map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The secrets master key is unavailable",
        )
    })?);
    let open = |s: &paperclip_core::company_secret::SealedVersion| vault.reveal(s);
    Ok(Json(
        proposals::approve(&app.store, actor, &company_id, &id, cascade, &open, &seal).await?,
    ))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/secret-proposals/{id}/reject", tag = "secrets",
    params(("companyId" = String, Path), ("id" = String, Path)), request_body = Rejection,
    responses((status = 200, body = SecretProposal), (status = 422, description = "Reason required")))]
#[paperclip_macros::handler]
async fn reject(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, id)): Path<(String, String)>,
    ValidJson(body): ValidJson<Rejection>,
) -> ApiResult<Json<SecretProposal>> {
    let actor = access::secrets_admin(&caller, &company_id)?;
    let reason = body.reason.as_deref().unwrap_or("").trim();
    if reason.is_empty() {
        return Err(rule("Rejection reason is required"));
    }
    Ok(Json(
        proposals::reject(&app.store, actor, &company_id, &id, reason).await?,
    ))
}

#[utoipa::path(get, path = "/api/agents/me/secrets", tag = "secrets",
    responses((status = 200, body = GrantList), (status = 403, description = "Not a run-bound agent")))]
#[paperclip_macros::handler]
async fn my_secrets(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Json<GrantList>> {
    let (actor, _) = run_bound(&caller, &headers)?;
    let grants = grants::grants(&app.store, &actor.id).await?;
    grants::record_access(
        &app.store,
        actor,
        Action::SecretAccessListed,
        (EntityType::Agent, &actor.id),
        json!({ "count": grants.len() }),
    )
    .await?;
    Ok(Json(GrantList {
        secrets: grants.into_iter().map(|(g, _)| g).collect(),
    }))
}

#[utoipa::path(post, path = "/api/agents/me/secrets/{key}/value", tag = "secrets",
    params(("key" = String, Path)), responses((status = 200, body = SecretValue),
        (status = 403, description = "Not granted, or not a run-bound agent")))]
#[paperclip_macros::handler]
async fn secret_value(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(key): Path<String>,
) -> ApiResult<impl IntoResponse> {
    let (actor, run_id) = run_bound(&caller, &headers)?;
    let grants = grants::grants(&app.store, &actor.id).await?;
    let Some((grant, secret_id)) = grants.into_iter().find(|(g, _)| g.key == key) else {
        grants::record_access(
            &app.store,
            actor,
            Action::SecretValueRead,
            (EntityType::Agent, &actor.id),
            json!({ "key": key, "outcome": "denied" }),
        )
        .await?;
        return Err(ApiError::forbidden(
            "Secret access is not granted for this agent",
        ));
    };
    let sealed = paperclip_store::org::secrets::sealed_version(&app.store, &secret_id, None)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::CONFLICT, "Secret version not found"))?;
    let value = app.runtime.vault().reveal(&sealed).map_err(|why| {
        tracing::error!(secret = %secret_id, %why, "a granted secret could not be opened");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The secret could not be opened",
        )
    })?;
    // Before the value leaves: from now on the run's output never shows it.
    app.runtime.redact_in_run(&run_id, &value);
    grants::record_access(
        &app.store,
        actor,
        Action::SecretValueRead,
        (EntityType::Secret, &secret_id),
        json!({ "key": grant.key, "version": sealed.version, "outcome": "success" }),
    )
    .await?;
    Ok((
        [(header::CACHE_CONTROL, "no-store")],
        Json(SecretValue {
            key: grant.key,
            value,
            version: sealed.version,
        }),
    ))
}

impl paperclip_core::limits::Validate for Approval {
    fn validate(&self) -> Result<(), paperclip_core::limits::Violation> {
        Ok(())
    }
}

impl paperclip_core::limits::Validate for Rejection {
    fn validate(&self) -> Result<(), paperclip_core::limits::Violation> {
        match &self.reason {
            Some(r) => paperclip_core::limits::text("reason", r, 20_000),
            None => Ok(()),
        }
    }
}
