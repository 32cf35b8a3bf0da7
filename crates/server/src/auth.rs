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
use axum::http::{Method, StatusCode};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::team::{MembershipStatus, Permission, Role};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::extract::header_text;
use crate::AppState;

/// Header by which an agent ties a request to its heartbeat run.
pub const RUN_ID_HEADER: &str = "x-paperclip-run-id";

/// Agent API keys start with this, which is how they are told apart from run tokens.
pub const KEY_PREFIX: &str = "pcp_";

/// The authenticated caller of a request: who acts (stamped on what it
/// writes), what they may reach, and what the matched route needs.
pub struct Caller {
    actor: Actor,
    access: Access,
    need: Permission,
    /// The person an agent acts for: the one its API key answers to.
    on_behalf_of: Option<String>,
}

/// What a caller may reach.
pub enum Access {
    /// The local board of a local trusted instance: every company.
    Everything,
    /// An agent: its own company.
    Agent,
    /// A person signed in to an authenticated instance (a session or a board
    /// API key): the companies they are a member of, within their role.
    Person(Box<Person>),
}

#[derive(Clone)]
pub struct Person {
    pub user: paperclip_store::org::people::BoardUser,
    pub memberships: Vec<paperclip_store::org::members::Membership>,
    /// Set when the request came with a board API key.
    pub key: Option<paperclip_store::org::board_keys::BoardKey>,
    /// Set when the request came with a session cookie.
    pub session_id: Option<String>,
}

impl Person {
    /// Whether the request came with a board API key naming companies: it
    /// acts in those only, and on nothing instance- or account-wide.
    pub fn company_scoped(&self) -> bool {
        self.key.as_ref().is_some_and(|k| !k.company_ids.is_empty())
    }

    /// The active role of this person in a company their credential reaches.
    pub fn role_in(&self, company_id: &str) -> Option<Role> {
        if let Some(key) = &self.key {
            if !key.company_ids.is_empty() && !key.company_ids.iter().any(|c| c == company_id) {
                return None;
            }
        }
        self.memberships
            .iter()
            .find(|m| m.company_id == company_id && m.status == MembershipStatus::Active)
            .map(|m| m.role)
    }

    fn check(&self, company_id: &str, need: Permission) -> Result<(), ApiError> {
        let refuse = |message: String, reason: &str| {
            Err(
                ApiError::forbidden(message).with_details(serde_json::json!({
                    "reason": reason,
                    "permission": need.key(),
                })),
            )
        };
        if let Some(key) = &self.key {
            if !key.company_ids.is_empty() && !key.company_ids.iter().any(|c| c == company_id) {
                return refuse(
                    "This API key is not scoped to this company".into(),
                    "deny_key_scope",
                );
            }
        }
        let Some(membership) = self.memberships.iter().find(|m| m.company_id == company_id) else {
            return refuse(
                "User does not have access to this company".into(),
                "deny_missing_membership",
            );
        };
        if membership.status != MembershipStatus::Active {
            return refuse(
                "User does not have active company access".into(),
                "deny_inactive_membership",
            );
        }
        match membership.role {
            role if role.grants(need) => Ok(()),
            Role::Viewer => refuse("Viewer access is read-only".into(), "deny_viewer"),
            role => refuse(
                format!(
                    "Missing permission: {}. Your role ({role}) cannot {}; ask an owner.",
                    need.key(),
                    need.describe()
                ),
                "deny_missing_grant",
            ),
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Caller, ApiError> {
        let route = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map(|r| r.as_str().to_string());
        let need = match &route {
            Some(route) => crate::permissions::need(&parts.method, route),
            None if parts.method == Method::GET => Permission::Read,
            None => Permission::CompanyManage,
        };
        // A run id or credential that is not text is refused (400), not
        // read as absent: a garbled `Authorization` is not "no credential".
        let run_header = header_text(&parts.headers, RUN_ID_HEADER)?
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        let bearer = header_text(&parts.headers, axum::http::header::AUTHORIZATION.as_str())?
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim)
            .filter(|v| !v.is_empty());
        if let Some(token) = bearer {
            if token.starts_with(crate::people::BOARD_KEY_PREFIX) {
                let person = crate::signin::by_board_key(app, token).await?;
                let caller = person_caller(person, run_header, need)?;
                return check_path_company(app, parts, route.as_deref(), caller).await;
            }
            let (actor, on_behalf_of) = authenticate_agent(app, token, run_header).await?;
            return Ok(Caller {
                actor,
                access: Access::Agent,
                need,
                on_behalf_of,
            });
        }
        if parts.extensions.get::<crate::guard::LocalBoard>().is_some() {
            check_board_run(&run_header)?;
            let mut actor = Actor::local_board();
            actor.run_id = run_header;
            return Ok(Caller {
                actor,
                access: Access::Everything,
                need,
                on_behalf_of: None,
            });
        }
        if app.security.team.authenticated() {
            if let Some(token) = crate::people::session_token(&parts.headers)? {
                let person = crate::signin::by_session(app, &token).await?;
                if !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
                    crate::signin::check_csrf(&parts.headers, &token)?;
                }
                let caller = person_caller(person, run_header, need)?;
                return check_path_company(app, parts, route.as_deref(), caller).await;
            }
            return Err(unauthorized(
                "Board authentication required: sign in, or send a board API key",
            )
            .with_details(serde_json::json!({ "code": "sign_in_required" })));
        }
        // The guard decided whether a credential-less request is the local
        // board (loopback, not from a run); without its mark, nobody is.
        Err(unauthorized(
            "Authentication required: send an agent API key or run token",
        ))
    }
}

fn person_caller(
    person: Person,
    run_header: Option<String>,
    need: Permission,
) -> Result<Caller, ApiError> {
    check_board_run(&run_header)?;
    let mut actor = Actor {
        kind: paperclip_core::actor::ActorKind::User,
        id: person.user.id.clone(),
        run_id: None,
        company_id: None,
    };
    actor.run_id = run_header;
    Ok(Caller {
        actor,
        access: Access::Person(Box::new(person)),
        need,
        on_behalf_of: None,
    })
}

/// A person's request is checked against the company its path names before
/// the handler runs (see [`crate::scope`]).
async fn check_path_company(
    app: &AppState,
    parts: &mut Parts,
    route: Option<&str>,
    caller: Caller,
) -> Result<Caller, ApiError> {
    if let Some(route) = route {
        if let Some(company) = crate::scope::company_of(app, parts, route).await {
            caller.ensure_company(&company)?;
        }
    }
    Ok(caller)
}

/// The board may name a run; a run's id is a UUID, and anything else names
/// no run and must not be recorded as if it did. (An agent's unknown run is
/// refused in [`authenticate_agent`], 401.)
fn check_board_run(run_header: &Option<String>) -> Result<(), ApiError> {
    if let Some(run) = run_header {
        if uuid::Uuid::try_parse(run).is_err() {
            return Err(ApiError::validation(serde_json::json!([{
                "code": "invalid_string",
                "path": ["headers", RUN_ID_HEADER],
                "message": format!("{RUN_ID_HEADER} must be a run's id (a UUID)"),
            }])));
        }
    }
    Ok(())
}

async fn authenticate_agent(
    app: &AppState,
    token: &str,
    run_header: Option<String>,
) -> Result<(Actor, Option<String>), ApiError> {
    let store = &app.store;
    let by_key = token.starts_with(KEY_PREFIX);
    // A key answers to the person who made it (upstream's responsible user);
    // a run token to nobody we record (our runs keep no responsible person).
    let mut on_behalf_of = None;
    let (agent_id, run_id) = if by_key {
        let key = paperclip_store::org::keys::find_by_hash(store, &hash_key(token))
            .await?
            .ok_or_else(|| unauthorized("Invalid API key"))?;
        paperclip_store::org::keys::touch(store, &key).await?;
        on_behalf_of = key.responsible_user_id.clone();
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
    let agent = paperclip_store::org::agents::brief(store, &agent_id)
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
    Ok((
        Actor::agent(&agent.id, &agent.company_id, run_id),
        on_behalf_of,
    ))
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

pub(crate) fn unauthorized(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
}

impl Caller {
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    pub fn access(&self) -> &Access {
        &self.access
    }

    /// The signed-in person, on an authenticated instance.
    pub fn person(&self) -> Option<&Person> {
        match &self.access {
            Access::Person(p) => Some(p),
            _ => None,
        }
    }

    /// Board-only operations (pause, keys, force-release, deletes, ...).
    pub fn require_board(&self) -> Result<&Actor, ApiError> {
        if self.actor.is_board() {
            Ok(&self.actor)
        } else {
            Err(ApiError::forbidden("Board access required"))
        }
    }

    /// Instance-level operations (creating a company): the local board or an
    /// instance administrator, by a session or an unscoped key (a key naming
    /// companies acts in them only, never on the instance).
    pub fn require_instance_admin(&self) -> Result<&Actor, ApiError> {
        match &self.access {
            Access::Everything => Ok(&self.actor),
            Access::Person(p) if !p.user.is_instance_admin => {
                Err(ApiError::forbidden("Instance admin required"))
            }
            Access::Person(p) if p.company_scoped() => Err(ApiError::forbidden(
                "This API key is scoped to companies: instance-level actions need a signed-in session or a key naming no company",
            )
            .with_details(serde_json::json!({ "reason": "deny_key_scope" }))),
            Access::Person(_) => Ok(&self.actor),
            Access::Agent => Err(ApiError::forbidden("Board access required")),
        }
    }

    /// Whether the caller sees `company_id` at all (lists filter by this).
    pub fn sees_company(&self, company_id: &str) -> bool {
        match &self.access {
            Access::Everything => true,
            Access::Agent => self.actor.can_access_company(company_id),
            Access::Person(p) => p.role_in(company_id).is_some(),
        }
    }

    /// The caller may act on `company_id` as the route needs: the local board
    /// anywhere, an agent at home, a person within their role there.
    pub fn ensure_company(&self, company_id: &str) -> Result<(), ApiError> {
        match &self.access {
            Access::Everything => Ok(()),
            Access::Agent if self.actor.can_access_company(company_id) => Ok(()),
            Access::Agent => Err(ApiError::forbidden(
                "Agent key cannot access another company",
            )),
            Access::Person(p) => p.check(company_id, self.need),
        }
    }

    /// A permission beyond the route's own (e.g. `tasks:assign` when an edit
    /// reassigns): people are held to their role, agents to their company.
    pub fn ensure_permission(&self, company_id: &str, need: Permission) -> Result<(), ApiError> {
        match &self.access {
            Access::Person(p) => p.check(company_id, need),
            _ => self.ensure_company(company_id),
        }
    }

    /// Agents' writes to issues must belong to one of their runs.
    pub fn require_run(&self) -> Result<&Actor, ApiError> {
        if self.actor.agent_id().is_some() && self.actor.run_id.is_none() {
            return Err(unauthorized("Agent run id required").with_details(serde_json::json!({
                "header": "X-Paperclip-Run-Id",
                "hint": "Send the run id of your current heartbeat ($PAPERCLIP_RUN_ID) with every write",
            })));
        }
        Ok(&self.actor)
    }

    pub fn agent_id(&self) -> Option<&str> {
        self.actor.agent_id()
    }

    /// The person an agent acts for, when its credential names one.
    pub fn on_behalf_of(&self) -> Option<&str> {
        self.on_behalf_of.as_deref()
    }
}
