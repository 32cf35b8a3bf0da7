//! People in a company, on upstream's paths: members and their roles, and
//! the invites that bring people in (a link with a one-time token, shown
//! once; the store keeps its SHA-256).

use std::time::Duration;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::team::{MembershipStatus, Role};
use paperclip_store::org::members::{self, Change, Invite, Membership};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::{Access, Caller};
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::people::{self, INVITE_PREFIX};
use crate::routes::accounts::{limit_ip, too_many};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_members))
        .routes(routes!(update_member))
        .routes(routes!(archive_member))
        .routes(routes!(create_invite, list_invites))
        .routes(routes!(revoke_invite))
        .routes(routes!(show_invite))
        .routes(routes!(accept_invite))
}

const INVITE_TTL: Duration = Duration::from_secs(72 * 3600);
const INVITES_PER_HOUR: usize = 50;

fn member_json(m: &Membership) -> Value {
    json!({
        "id": m.id,
        "companyId": m.company_id,
        "principalType": "user",
        "principalId": m.user_id,
        "status": m.status,
        "membershipRole": m.role,
        "createdAt": m.created_at,
        "updatedAt": m.updated_at,
        "user": { "id": m.user_id, "email": m.user_email, "name": m.user_name, "image": null },
    })
}

fn invite_state(i: &Invite) -> &'static str {
    if i.revoked_at.is_some() {
        "revoked"
    } else if i.accepted_at.is_some() {
        "accepted"
    } else if i.expires_at.as_str() <= paperclip_store::now().as_str() {
        "expired"
    } else {
        "active"
    }
}

fn invite_json(i: &Invite) -> Value {
    json!({
        "id": i.id,
        "companyId": i.company_id,
        "inviteType": if i.instance_admin { "bootstrap_ceo" } else { "company_join" },
        "allowedJoinTypes": "human",
        "humanRole": i.role,
        "invitedByUserId": i.created_by_user_id,
        "createdAt": i.created_at,
        "expiresAt": i.expires_at,
        "acceptedAt": i.accepted_at,
        "revokedAt": i.revoked_at,
        "state": invite_state(i),
    })
}

/// Refusal for people-only routes called in local trusted mode or by an agent.
fn person_only(caller: &Caller) -> ApiResult<()> {
    match caller.access() {
        Access::Person(_) => Ok(()),
        Access::Everything => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "People and invites need an authenticated deployment (--deployment-mode authenticated)",
        )),
        Access::Agent => Err(ApiError::forbidden("Board access required")),
    }
}

#[utoipa::path(get, path = "/api/companies/{companyId}/members", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, description = "Members and what the caller may do")))]
async fn list_members(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let list = members::list(&app.store, &company_id).await?;
    let role = caller.person().and_then(|p| p.role_in(&company_id));
    Ok(Json(json!({
        "members": list.iter().map(member_json).collect::<Vec<_>>(),
        "access": {
            "currentUserRole": role,
            "canManageMembers": role.is_some_and(|r| r.grants(paperclip_core::team::Permission::UsersManage)),
            "canInviteUsers": role.is_some_and(|r| r.grants(paperclip_core::team::Permission::UsersInvite)),
        },
    })))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct MemberPatch {
    membership_role: Option<String>,
    status: Option<String>,
}

async fn member_of(app: &AppState, company_id: &str, member_id: &str) -> ApiResult<Membership> {
    let m = members::get(&app.store, member_id).await?;
    if m.company_id != company_id {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "Member not found"));
    }
    Ok(m)
}

/// Changes a member's role or suspends / reactivates them.
#[utoipa::path(patch, path = "/api/companies/{companyId}/members/{memberId}", tag = "companies",
    params(("companyId" = String, Path), ("memberId" = String, Path)), request_body = MemberPatch,
    responses((status = 200, description = "The member"), (status = 409, description = "Last owner")))]
async fn update_member(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, member_id)): Path<(String, String)>,
    JsonBody(patch): JsonBody<MemberPatch>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    let member = member_of(&app, &company_id, &member_id).await?;
    let role = match patch.membership_role.as_deref() {
        None => None,
        Some(text) => Some(Role::parse(text).ok_or_else(|| {
            ApiError::validation(
                json!([{ "code": "invalid_enum_value", "path": ["membershipRole"],
                "message": "membershipRole must be owner, admin, operator or viewer" }]),
            )
        })?),
    };
    let status = match patch.status.as_deref() {
        None => None,
        Some(text) => Some(MembershipStatus::parse(text).ok_or_else(|| {
            ApiError::validation(json!([{ "code": "invalid_enum_value", "path": ["status"],
                "message": "status must be active or suspended" }]))
        })?),
    };
    if role.is_none() && status.is_none() {
        return Err(ApiError::validation(json!([{ "code": "custom", "path": [],
            "message": "Send membershipRole or status" }])));
    }
    if status == Some(MembershipStatus::Suspended)
        && Some(member.user_id.as_str()) == actor.user_id()
    {
        return Err(ApiError::forbidden("You cannot suspend yourself."));
    }
    let mut after = member;
    if let Some(role) = role {
        after = members::change(&app.store, &actor, &member_id, Change::Role(role))
            .await?
            .unwrap_or(after);
    }
    if let Some(status) = status {
        after = members::change(&app.store, &actor, &member_id, Change::Status(status))
            .await?
            .unwrap_or(after);
    }
    Ok(Json(member_json(&after)))
}

/// Removes a member from the company (upstream archives; the activity log
/// keeps what they did).
#[utoipa::path(post, path = "/api/companies/{companyId}/members/{memberId}/archive", tag = "companies",
    params(("companyId" = String, Path), ("memberId" = String, Path)),
    responses((status = 200, description = "Removed"), (status = 409, description = "Last owner")))]
async fn archive_member(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, member_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    let member = member_of(&app, &company_id, &member_id).await?;
    if Some(member.user_id.as_str()) == actor.user_id() {
        return Err(ApiError::forbidden("You cannot remove yourself."));
    }
    members::change(&app.store, &actor, &member_id, Change::Remove).await?;
    let mut record = member_json(&member);
    record["status"] = json!("archived");
    Ok(Json(json!({ "member": record, "reassignedIssueCount": 0 })))
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
    responses((status = 201, description = "The invite with its token, once")))]
async fn create_invite(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<NewInvite>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    person_only(&caller)?;
    let actor = caller.require_board()?.clone();
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
    if role == Role::Owner
        && caller.person().and_then(|p| p.role_in(&company_id)) != Some(Role::Owner)
    {
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
    let key_expiry = caller
        .person()
        .and_then(|p| p.key.as_ref())
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
    let mut body = invite_json(&invite);
    let path = format!("/invite/{token}");
    body["token"] = json!(token);
    body["inviteUrl"] = json!(format!("{}{path}", app.security.team.base_url));
    body["invitePath"] = json!(path);
    body["companyName"] = json!(company.name);
    Ok((StatusCode::CREATED, Json(body)))
}

pub(crate) fn expiry(ttl: Duration) -> String {
    (chrono::Utc::now() + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::days(3)))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[utoipa::path(get, path = "/api/companies/{companyId}/invites", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, description = "The company's invites, newest first")))]
async fn list_invites(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let list = members::invites(&app.store, &company_id).await?;
    Ok(Json(json!({
        "invites": list.iter().map(invite_json).collect::<Vec<_>>(),
        "nextOffset": null,
    })))
}

#[utoipa::path(post, path = "/api/invites/{inviteId}/revoke", tag = "companies",
    params(("inviteId" = String, Path)),
    responses((status = 200, description = "Revoked"), (status = 409, description = "Already used")))]
async fn revoke_invite(
    State(app): State<AppState>,
    caller: Caller,
    Path(invite_id): Path<String>,
) -> ApiResult<Json<Value>> {
    let actor = caller.require_board()?.clone();
    let invite = members::invite(&app.store, &invite_id).await?;
    match &invite.company_id {
        Some(company_id) => caller.ensure_company(company_id)?,
        None => {
            caller.require_instance_admin()?;
        }
    }
    let invite = members::revoke_invite(&app.store, &actor, &invite_id).await?;
    Ok(Json(invite_json(&invite)))
}

type Peer = ConnectInfo<std::net::SocketAddr>;

/// What an invite link is for, before signing in (public, rate limited).
#[utoipa::path(get, path = "/api/invites/{token}", tag = "companies",
    params(("token" = String, Path)),
    responses((status = 200, description = "The invite"), (status = 404, description = "Invite not found")))]
async fn show_invite(
    State(app): State<AppState>,
    peer: Peer,
    Path(token): Path<String>,
) -> ApiResult<Json<Value>> {
    limit_ip(&app, &peer, "invite")?;
    let invite = usable_invite(&app, &token).await?;
    let mut body = invite_json(&invite);
    if let Some(company_id) = &invite.company_id {
        let company = paperclip_store::org::companies::get(&app.store, company_id).await?;
        body["companyName"] = json!(company.name);
    }
    body["invitePath"] = json!(format!("/invite/{token}"));
    Ok(Json(body))
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
    responses((status = 202, description = "Joined"), (status = 401, description = "Sign in first"),
        (status = 404, description = "Invite not found"), (status = 409, description = "Already used or already a member")))]
async fn accept_invite(
    State(app): State<AppState>,
    peer: Peer,
    caller: Result<Caller, ApiError>,
    Path(token): Path<String>,
    JsonBody(body): JsonBody<Acceptance>,
) -> ApiResult<(StatusCode, Json<Value>)> {
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
    if invite.instance_admin {
        return Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "inviteId": invite.id,
                "inviteType": "bootstrap_ceo",
                "bootstrapAccepted": true,
                "userId": user.id,
            })),
        ));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "id": invite.id,
            "inviteId": invite.id,
            "companyId": invite.company_id,
            "requestType": "human",
            "status": "approved",
            "requestingUserId": user.id,
            "requestEmailSnapshot": user.email,
            "approvedByUserId": invite.created_by_user_id,
            "approvedAt": invite.accepted_at,
            "membership": membership.as_ref().map(member_json),
        })),
    ))
}
