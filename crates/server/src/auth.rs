//! Who is calling, and what they may do.
//!
//! - No `Authorization` header, let in by [`crate::guard`] (loopback, not
//!   from inside an agent run): the implicit board user `local-board`
//!   (local trusted mode; the server binds loopback only).
//! - `Authorization: Bearer pcp_...`: an agent API key (stored as a SHA-256).
//! - `Authorization: Bearer <JWT>`: a run token minted for one heartbeat run;
//!   valid only while that run is running.
//!
//! An agent acts only inside its company, and its writes to issues must name
//! a run of its own (`X-Paperclip-Run-Id`, implied by a run token), so every
//! agent write is attributable to a heartbeat.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::RunStatus;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::AppState;

/// Header by which an agent ties a request to its heartbeat run.
pub const RUN_ID_HEADER: &str = "x-paperclip-run-id";

/// Agent API keys start with this, which is how they are told apart from run tokens.
pub const KEY_PREFIX: &str = "pcp_";

/// The authenticated caller of a request.
pub struct Caller(pub Actor);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Caller, ApiError> {
        let run_header = parts
            .headers
            .get(RUN_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let bearer = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|v| !v.is_empty());
        if let Some(token) = bearer {
            return authenticate_agent(app, token, run_header).await.map(Caller);
        }
        // The guard decided whether a credential-less request is the local
        // board (loopback, not from a run); without its mark, nobody is.
        if parts.extensions.get::<crate::guard::LocalBoard>().is_none() {
            return Err(unauthorized(
                "Authentication required: send an agent API key or run token",
            ));
        }
        // The board may name a run; a run's id is a UUID, and anything else
        // names no run and must not be recorded as if it did. (An agent's
        // unknown run is refused above, 401.)
        if let Some(run) = &run_header {
            if uuid::Uuid::try_parse(run).is_err() {
                return Err(ApiError::validation(serde_json::json!([{
                    "code": "invalid_string",
                    "path": ["headers", RUN_ID_HEADER],
                    "message": format!("{RUN_ID_HEADER} must be a run's id (a UUID)"),
                }])));
            }
        }
        let mut actor = Actor::local_board();
        actor.run_id = run_header;
        Ok(Caller(actor))
    }
}

async fn authenticate_agent(
    app: &AppState,
    token: &str,
    run_header: Option<String>,
) -> Result<Actor, ApiError> {
    let store = &app.store;
    let by_key = token.starts_with(KEY_PREFIX);
    let (agent_id, run_id) = if by_key {
        let key = paperclip_store::keys::find_by_hash(store, &hash_key(token))
            .await?
            .ok_or_else(|| unauthorized("Invalid API key"))?;
        paperclip_store::keys::touch(store, &key).await?;
        (key.agent_id, run_header)
    } else {
        let claims = app
            .runtime
            .tokens()
            .verify(token)
            .ok_or_else(|| unauthorized("Invalid or expired token"))?;
        if run_header.as_ref().is_some_and(|h| *h != claims.run_id) {
            return Err(unauthorized(
                "X-Paperclip-Run-Id does not match the run token",
            ));
        }
        (claims.sub, Some(claims.run_id))
    };
    let agent = paperclip_store::agents::brief(store, &agent_id)
        .await
        .map_err(|_| unauthorized("Agent not found"))?;
    if matches!(
        agent.status,
        AgentStatus::Terminated | AgentStatus::PendingApproval
    ) {
        return Err(unauthorized(format!("Agent is {}", agent.status)));
    }
    if let Some(run_id) = &run_id {
        // A run id names one of this very agent's runs. A run token dies with
        // its run. An API key outlives runs, and upstream's agents send it with
        // the id of a run that may have ended (a script finishing its work, the
        // skill's procedure after the heartbeat): that is accepted and the
        // writes are attributed to the run, but an ended run holds nothing —
        // a checkout under it takes the task without a run lock (see
        // `issues::checkout`), so no stale lock can come of it.
        let run = paperclip_store::runs::get(store, run_id)
            .await
            .map_err(|_| unauthorized("Unknown run id"))?;
        if run.agent_id != agent.id {
            return Err(unauthorized("Run belongs to another agent"));
        }
        if !by_key && run.status != RunStatus::Running {
            return Err(unauthorized("Run is no longer active"));
        }
    }
    Ok(Actor::agent(&agent.id, &agent.company_id, run_id))
}

pub fn hash_key(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new agent API key: `pcp_` and 32 random bytes, hex.
pub fn new_key() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{KEY_PREFIX}{}", hex::encode(bytes))
}

fn unauthorized(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
}

impl Caller {
    pub fn actor(&self) -> &Actor {
        &self.0
    }

    /// Board-only operations (pause, keys, force-release, deletes, ...).
    pub fn require_board(&self) -> Result<&Actor, ApiError> {
        if self.0.is_board() {
            Ok(&self.0)
        } else {
            Err(ApiError::forbidden("Board access required"))
        }
    }

    /// The caller may act on `company_id`: the board anywhere, an agent at home.
    pub fn ensure_company(&self, company_id: &str) -> Result<(), ApiError> {
        if self.0.can_access_company(company_id) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "Agent key cannot access another company",
            ))
        }
    }

    /// Agents' writes to issues must belong to one of their runs.
    pub fn require_run(&self) -> Result<&Actor, ApiError> {
        if self.0.agent_id().is_some() && self.0.run_id.is_none() {
            return Err(unauthorized("Agent run id required").with_details(serde_json::json!({
                "header": "X-Paperclip-Run-Id",
                "hint": "Send the run id of your current heartbeat ($PAPERCLIP_RUN_ID) with every write",
            })));
        }
        Ok(&self.0)
    }

    pub fn agent_id(&self) -> Option<&str> {
        self.0.agent_id()
    }
}
