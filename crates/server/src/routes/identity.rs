//! Who a board client is talking as: upstream's `cli-auth/me`, which its CLI's
//! `whoami` reads: the local board of a `local_trusted` instance, or a person
//! of an authenticated one (by session or board API key).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::team::{MembershipStatus, Role};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Access, Caller};
use crate::error::{ApiError, ApiResult};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(me))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoardIdentity {
    /// The person (for the local board, its `local-board` person).
    user: Option<IdentityUser>,
    user_id: String,
    is_instance_admin: bool,
    /// Every company it can act in.
    company_ids: Vec<String>,
    /// Its memberships (the local board: an owner of every company).
    memberships: Vec<IdentityMembership>,
    /// How the request was recognised: `local_implicit` (a loopback request
    /// with no credentials), `session` or `board_key`.
    source: &'static str,
    /// The board API key used, if any.
    key_id: Option<String>,
}

// Fields in name order, as the JSON objects these replaced.
#[derive(Debug, Serialize, ToSchema)]
pub struct IdentityUser {
    email: String,
    id: String,
    name: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentityMembership {
    company_id: String,
    membership_role: Role,
    status: MembershipStatus,
}

#[utoipa::path(get, path = "/api/cli-auth/me", tag = "health",
    responses((status = 200, body = BoardIdentity),
        (status = 401, description = "Board authentication required (an agent key was sent)", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn me(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<BoardIdentity>> {
    match caller.access() {
        Access::Agent => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Board authentication required",
        )),
        // The local board's person, an owner of every company, as upstream.
        Access::Everything => {
            let p = crate::signin::board_person(&app, &caller).await?;
            Ok(Json(BoardIdentity {
                user: Some(IdentityUser {
                    email: p.user.email.clone(),
                    id: p.user.id.clone(),
                    name: p.user.name.clone(),
                }),
                user_id: p.user.id.clone(),
                is_instance_admin: true,
                company_ids: p.memberships.iter().map(|m| m.company_id.clone()).collect(),
                memberships: p
                    .memberships
                    .iter()
                    .map(|m| IdentityMembership {
                        company_id: m.company_id.clone(),
                        membership_role: m.role,
                        status: m.status,
                    })
                    .collect(),
                source: "local_implicit",
                key_id: None,
            }))
        }
        Access::Person(p) => Ok(Json(BoardIdentity {
            user: Some(IdentityUser {
                email: p.user.email.clone(),
                id: p.user.id.clone(),
                name: p.user.name.clone(),
            }),
            user_id: p.user.id.clone(),
            // What this credential may do: a key naming companies acts on
            // nothing instance-wide, and sees only its companies.
            is_instance_admin: p.user.is_instance_admin && !p.company_scoped(),
            company_ids: p
                .memberships
                .iter()
                .filter(|m| p.role_in(&m.company_id).is_some())
                .map(|m| m.company_id.clone())
                .collect(),
            memberships: p
                .memberships
                .iter()
                .filter(|m| {
                    p.key.as_ref().is_none_or(|k| {
                        k.company_ids.is_empty() || k.company_ids.contains(&m.company_id)
                    })
                })
                .map(|m| IdentityMembership {
                    company_id: m.company_id.clone(),
                    membership_role: m.role,
                    status: m.status,
                })
                .collect(),
            source: if p.key.is_some() {
                "board_key"
            } else {
                "session"
            },
            key_id: p.key.as_ref().map(|k| k.id.clone()),
        })),
    }
}
