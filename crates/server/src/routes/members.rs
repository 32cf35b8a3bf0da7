//! People in a company, on upstream's paths: members and their roles, and
//! the invites that bring people in (a link with a one-time token, shown
//! once; the store keeps its SHA-256).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::team::{MembershipStatus, Role};
use paperclip_store::org::members::{self, Change, Membership};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_members))
        .routes(routes!(update_member))
        .routes(routes!(archive_member))
}

/// A person as a member list shows them (upstream's `user`); `image` is
/// always `null`, as this build keeps no avatars.
#[derive(Serialize, ToSchema)]
pub(crate) struct PersonRecord {
    pub(crate) email: String,
    pub(crate) id: String,
    pub(crate) image: Option<String>,
    pub(crate) name: String,
}

/// A membership's status as answered: an archive answers the member it just
/// removed as `archived`, which no stored membership is.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum MemberStatus {
    Active,
    Suspended,
    Archived,
}

impl From<MembershipStatus> for MemberStatus {
    fn from(status: MembershipStatus) -> MemberStatus {
        match status {
            MembershipStatus::Active => MemberStatus::Active,
            MembershipStatus::Suspended => MemberStatus::Suspended,
        }
    }
}

/// Upstream's principal kinds; people are the only members here.
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum PrincipalType {
    User,
}

// Fields in name order: the JSON object this replaced serialized its keys
// sorted, and clients may compare bodies as text.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CompanyMember {
    company_id: String,
    created_at: String,
    id: String,
    membership_role: Role,
    principal_id: String,
    principal_type: PrincipalType,
    status: MemberStatus,
    updated_at: String,
    user: PersonRecord,
}

impl From<&Membership> for CompanyMember {
    fn from(m: &Membership) -> CompanyMember {
        CompanyMember {
            company_id: m.company_id.clone(),
            created_at: m.created_at.clone(),
            id: m.id.clone(),
            membership_role: m.role,
            principal_id: m.user_id.clone(),
            principal_type: PrincipalType::User,
            status: m.status.into(),
            updated_at: m.updated_at.clone(),
            user: PersonRecord {
                email: m.user_email.clone(),
                id: m.user_id.clone(),
                image: None,
                name: m.user_name.clone(),
            },
        }
    }
}

/// What the caller may do with the members they are shown.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MemberAccess {
    can_invite_users: bool,
    can_manage_members: bool,
    /// `null` for the local board, which holds no membership.
    current_user_role: Option<Role>,
}

#[derive(Serialize, ToSchema)]
struct MemberList {
    access: MemberAccess,
    members: Vec<CompanyMember>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/members", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, description = "Members and what the caller may do", body = MemberList),
        (status = 403, description = "Not a board member of the company", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn list_members(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<MemberList>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let list = members::list(&app.store, &company_id).await?;
    let role = caller.person().and_then(|p| p.role_in(&company_id));
    let grants = |permission| role.is_some_and(|r| r.grants(permission));
    Ok(Json(MemberList {
        access: MemberAccess {
            can_invite_users: grants(paperclip_core::team::Permission::UsersInvite),
            can_manage_members: grants(paperclip_core::team::Permission::UsersManage),
            current_user_role: role,
        },
        members: list.iter().map(CompanyMember::from).collect(),
    }))
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
    responses((status = 200, description = "The member", body = CompanyMember),
        (status = 400, description = "Invalid role or status", body = ErrorBody),
        (status = 403, description = "Not allowed, or suspending oneself", body = ErrorBody),
        (status = 404, description = "Member not found", body = ErrorBody),
        (status = 409, description = "Last owner", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn update_member(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, member_id)): Path<(String, String)>,
    JsonBody(patch): JsonBody<MemberPatch>,
) -> ApiResult<Json<CompanyMember>> {
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
    Ok(Json(CompanyMember::from(&after)))
}

/// Removes a member from the company (upstream archives; the activity log
/// keeps what they did).
#[utoipa::path(post, path = "/api/companies/{companyId}/members/{memberId}/archive", tag = "companies",
    params(("companyId" = String, Path), ("memberId" = String, Path)),
    responses((status = 200, description = "Removed", body = ArchivedMember),
        (status = 403, description = "Not allowed, or removing oneself", body = ErrorBody),
        (status = 404, description = "Member not found", body = ErrorBody),
        (status = 409, description = "Last owner", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn archive_member(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, member_id)): Path<(String, String)>,
) -> ApiResult<Json<ArchivedMember>> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    let member = member_of(&app, &company_id, &member_id).await?;
    if Some(member.user_id.as_str()) == actor.user_id() {
        return Err(ApiError::forbidden("You cannot remove yourself."));
    }
    members::change(&app.store, &actor, &member_id, Change::Remove).await?;
    let mut record = CompanyMember::from(&member);
    record.status = MemberStatus::Archived;
    Ok(Json(ArchivedMember {
        member: record,
        reassigned_issue_count: 0,
    }))
}

/// The member as removed. Removing one reassigns none of their tasks here,
/// so upstream's `reassignedIssueCount` is always 0.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ArchivedMember {
    member: CompanyMember,
    reassigned_issue_count: u32,
}
