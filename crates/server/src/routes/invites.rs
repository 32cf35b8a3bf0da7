//! Invites on upstream's paths: a link with a one-time token (shown once; the
//! store keeps its SHA-256) that brings a person into a company, or, for the
//! first admin, into the instance.

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::JsonBody;
use crate::people::{self, INVITE_PREFIX};
use crate::routes::accounts::{limit_ip, too_many};
use crate::routes::members::*;
use crate::AppState;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::team::Role;
use paperclip_store::org::members::{self, Invite};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_invite, list_invites))
        .routes(routes!(revoke_invite))
        .routes(routes!(show_invite))
        .routes(routes!(accept_invite))
}

const INVITE_TTL: Duration = Duration::from_secs(72 * 3600);

const INVITES_PER_HOUR: usize = 50;

#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum InviteState {
    Active,
    Accepted,
    Expired,
    Revoked,
}

fn invite_state(i: &Invite) -> InviteState {
    if i.revoked_at.is_some() {
        InviteState::Revoked
    } else if i.accepted_at.is_some() {
        InviteState::Accepted
    } else if i.expires_at.as_str() <= paperclip_store::now().as_str() {
        InviteState::Expired
    } else {
        InviteState::Active
    }
}

#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum InviteType {
    /// The instance's first administrator (no company).
    BootstrapCeo,
    CompanyJoin,
}

/// Who may join by an invite: people only (agents are hired, not invited).
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum JoinType {
    Human,
}

/// An invite. The link fields are there only where the answer carries the
/// token's link: `token` and `inviteUrl` on creation (the one time the token
/// is shown), `invitePath` and `companyName` there and when the link is
/// opened. Fields in name order, as the JSON object this replaced.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct InviteRecord {
    accepted_at: Option<String>,
    allowed_join_types: JoinType,
    company_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    company_name: Option<String>,
    created_at: String,
    expires_at: String,
    human_role: Role,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    invite_path: Option<String>,
    invite_type: InviteType,
    #[serde(skip_serializing_if = "Option::is_none")]
    invite_url: Option<String>,
    invited_by_user_id: Option<String>,
    revoked_at: Option<String>,
    state: InviteState,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
}

impl From<&Invite> for InviteRecord {
    fn from(i: &Invite) -> InviteRecord {
        InviteRecord {
            accepted_at: i.accepted_at.clone(),
            allowed_join_types: JoinType::Human,
            company_id: i.company_id.clone(),
            company_name: None,
            created_at: i.created_at.clone(),
            expires_at: i.expires_at.clone(),
            human_role: i.role,
            id: i.id.clone(),
            invite_path: None,
            invite_type: if i.instance_admin {
                InviteType::BootstrapCeo
            } else {
                InviteType::CompanyJoin
            },
            invite_url: None,
            invited_by_user_id: i.created_by_user_id.clone(),
            revoked_at: i.revoked_at.clone(),
            state: invite_state(i),
            token: None,
        }
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct NewInvite {
    human_role: Option<String>,
    allowed_join_types: Option<String>,
}

/// An invite link for a person, with a role; the token is shown once.
#[utoipa::path(post, path = "/api/companies/{companyId}/invites", tag = "companies",
    params(("companyId" = String, Path)), request_body = NewInvite,
    responses((status = 201, description = "The invite with its token, once", body = InviteRecord),
        (status = 400, description = "Invalid role", body = ErrorBody),
        (status = 403, description = "Not allowed to invite (or to invite an owner)", body = ErrorBody),
        (status = 422, description = "An agent join", body = ErrorBody),
        (status = 429, description = "Too many invites", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn create_invite(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<NewInvite>,
) -> ApiResult<(StatusCode, Json<InviteRecord>)> {
    let actor = caller.require_board()?.clone();
    // In local trusted mode the local board invites as its person, as upstream.
    let who = crate::signin::board_person(&app, &caller).await?;
    let company = access::company(&app, &caller, &company_id).await?;
    if body
        .allowed_join_types
        .as_deref()
        .is_some_and(|t| t == "agent")
    {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Agent joins by invite are not supported here: hire agents from the board",
        ));
    }
    let role = match body.human_role.as_deref() {
        None => Role::Operator,
        Some(text) => Role::parse(text).ok_or_else(|| {
            ApiError::validation(
                json!([{ "code": "invalid_enum_value", "path": ["humanRole"],
                "message": "humanRole must be owner, admin, operator or viewer" }]),
            )
        })?,
    };
    // Only an owner can hand out ownership.
    if role == Role::Owner && who.role_in(&company_id) != Some(Role::Owner) {
        return Err(ApiError::forbidden("Only an owner can invite an owner"));
    }
    app.security
        .limiter
        .hit(
            &format!("invite-create:{}", actor.id),
            INVITES_PER_HOUR,
            Duration::from_secs(3600),
        )
        .map_err(|wait| {
            too_many(
                format!("Too many invites created: try again in {wait} s"),
                wait,
            )
        })?;
    let token = people::new_token(INVITE_PREFIX);
    // An invite made with a board API key is usable no longer than the key.
    let key_expiry = who
        .key
        .as_ref()
        .and_then(|k| k.expires_at.as_deref())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let expires = match key_expiry {
        Some(at) if at.to_utc() < chrono::Utc::now() + chrono::Duration::hours(72) => {
            at.to_utc().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
        }
        _ => expiry(INVITE_TTL),
    };
    let invite = members::create_invite(
        &app.store,
        &actor,
        Some(&company_id),
        role,
        &people::hash_token(&token),
        &expires,
    )
    .await?;
    let path = format!("/invite/{token}");
    let body = InviteRecord {
        company_name: Some(company.name),
        invite_url: Some(format!("{}{path}", app.security.team.base_url)),
        invite_path: Some(path),
        token: Some(token),
        ..InviteRecord::from(&invite)
    };
    Ok((StatusCode::CREATED, Json(body)))
}

pub(crate) fn expiry(ttl: Duration) -> String {
    (chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(3)))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[utoipa::path(get, path = "/api/companies/{companyId}/invites", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, description = "The company's invites, newest first", body = InviteList),
        (status = 403, description = "Not a board member of the company", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn list_invites(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<InviteList>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let list = members::invites(&app.store, &company_id).await?;
    Ok(Json(InviteList {
        invites: list.iter().map(InviteRecord::from).collect(),
        next_offset: None,
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct InviteList {
    invites: Vec<InviteRecord>,
    /// Always `null`: the whole list is one page.
    next_offset: Option<u64>,
}

#[utoipa::path(post, path = "/api/invites/{inviteId}/revoke", tag = "companies",
    params(("inviteId" = String, Path)),
    responses((status = 200, description = "Revoked", body = InviteRecord),
        (status = 403, description = "Not allowed", body = ErrorBody),
        (status = 404, description = "Invite not found", body = ErrorBody),
        (status = 409, description = "Already used", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn revoke_invite(
    State(app): State<AppState>,
    caller: Caller,
    Path(invite_id): Path<String>,
) -> ApiResult<Json<InviteRecord>> {
    let actor = caller.require_board()?.clone();
    let invite = members::invite(&app.store, &invite_id).await?;
    match &invite.company_id {
        Some(company_id) => caller.ensure_company(company_id)?,
        None => {
            caller.require_instance_admin()?;
        }
    }
    let invite = members::revoke_invite(&app.store, &actor, &invite_id).await?;
    Ok(Json(InviteRecord::from(&invite)))
}

type Peer = ConnectInfo<std::net::SocketAddr>;

/// What an invite link is for, before signing in (public, rate limited).
#[utoipa::path(get, path = "/api/invites/{token}", tag = "companies",
    params(("token" = String, Path)),
    responses((status = 200, description = "The invite, with its path (and company name, unless it is the bootstrap invite)", body = InviteRecord),
        (status = 404, description = "Invite not found", body = ErrorBody),
        (status = 429, description = "Too many requests", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn show_invite(
    State(app): State<AppState>,
    peer: Peer,
    Path(token): Path<String>,
) -> ApiResult<Json<InviteRecord>> {
    limit_ip(&app, &peer, "invite")?;
    let invite = usable_invite(&app, &token).await?;
    let company_name = match &invite.company_id {
        Some(company_id) => Some(
            paperclip_store::org::companies::get(&app.store, company_id)
                .await?
                .name,
        ),
        None => None,
    };
    Ok(Json(InviteRecord {
        company_name,
        invite_path: Some(format!("/invite/{token}")),
        ..InviteRecord::from(&invite)
    }))
}

async fn usable_invite(app: &AppState, token: &str) -> ApiResult<Invite> {
    let not_found = || ApiError::new(StatusCode::NOT_FOUND, "Invite not found");
    let invite = members::invite_by_token(&app.store, &people::hash_token(token))
        .await
        .map_err(|_| not_found())?;
    if invite.unusable(&paperclip_store::now()).is_some() {
        return Err(not_found());
    }
    Ok(invite)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct Acceptance {
    request_type: Option<String>,
}

/// The signed-in person takes the invite: a membership with its role, or the
/// instance's administration for the bootstrap invite.
#[utoipa::path(post, path = "/api/invites/{token}/accept", tag = "companies",
    params(("token" = String, Path)), request_body = Acceptance,
    responses((status = 202, description = "Joined", body = InviteAccepted),
        (status = 400, description = "An agent join", body = ErrorBody),
        (status = 401, description = "Sign in first", body = ErrorBody),
        (status = 403, description = "A key scoped to companies", body = ErrorBody),
        (status = 404, description = "Invite not found", body = ErrorBody),
        (status = 409, description = "Already used or already a member", body = ErrorBody),
        (status = 429, description = "Too many requests", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn accept_invite(
    State(app): State<AppState>,
    peer: Peer,
    caller: Result<Caller, ApiError>,
    Path(token): Path<String>,
    JsonBody(body): JsonBody<Acceptance>,
) -> ApiResult<(StatusCode, Json<InviteAccepted>)> {
    limit_ip(&app, &peer, "invite")?;
    if body.request_type.as_deref().is_some_and(|t| t != "human") {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "Invite does not allow agent joins",
        ));
    }
    usable_invite(&app, &token).await?;
    let person = caller
        .ok()
        .and_then(|c| c.person().map(|p| (p.user.id.clone(), p.company_scoped())));
    let Some((user_id, scoped)) = person else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Human invite acceptance requires authenticated user: sign up or sign in first",
        ));
    };
    // Joining a company (or the instance's administration) changes the whole
    // account: not for a key that acts in some companies only.
    if scoped {
        return Err(ApiError::forbidden(
            "This API key is scoped to companies: accept invites from a signed-in session or with a key naming no company",
        )
        .with_details(json!({ "reason": "deny_key_scope" })));
    }
    let (invite, user, membership) =
        members::accept(&app.store, &people::hash_token(&token), &user_id).await?;
    let accepted = if invite.instance_admin {
        InviteAccepted::Bootstrap(BootstrapAccepted {
            bootstrap_accepted: true,
            invite_id: invite.id,
            invite_type: InviteType::BootstrapCeo,
            user_id: user.id,
        })
    } else {
        InviteAccepted::Joined(Box::new(JoinRequest {
            approved_at: invite.accepted_at,
            approved_by_user_id: invite.created_by_user_id,
            company_id: invite.company_id,
            id: invite.id.clone(),
            invite_id: invite.id,
            membership: membership.as_ref().map(CompanyMember::from),
            request_email_snapshot: user.email,
            request_type: JoinType::Human,
            requesting_user_id: user.id,
            status: JoinRequestStatus::Approved,
        }))
    };
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// What accepting an invite answers: the instance's administration for the
/// bootstrap invite, else upstream's join request, approved at once.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
enum InviteAccepted {
    Bootstrap(BootstrapAccepted),
    Joined(Box<JoinRequest>),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct BootstrapAccepted {
    bootstrap_accepted: bool,
    invite_id: String,
    invite_type: InviteType,
    user_id: String,
}

/// A join request's status: a request made by accepting an invite is
/// approved at once.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum JoinRequestStatus {
    Approved,
}

// Fields in name order, as the JSON object this replaced.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct JoinRequest {
    approved_at: Option<String>,
    approved_by_user_id: Option<String>,
    company_id: Option<String>,
    id: String,
    invite_id: String,
    /// `null` only for an invite naming no company (the bootstrap one answers
    /// the other shape).
    membership: Option<CompanyMember>,
    request_email_snapshot: String,
    request_type: JoinType,
    requesting_user_id: String,
    status: JoinRequestStatus,
}
