//! Turning a person's credential (a session cookie or a board API key) into
//! who they are and which companies they belong to.

use axum::http::HeaderMap;
use serde_json::json;

use paperclip_core::team::{MembershipStatus, Role};
use paperclip_store::org::board_keys::BoardKey;
use paperclip_store::org::members::Membership;

use crate::auth::{unauthorized, Access, Caller, Person};
use crate::error::ApiError;
use crate::people::{csrf_token, hash_token, CSRF_HEADER};
use crate::AppState;

pub async fn by_session(app: &AppState, token: &str) -> Result<Person, ApiError> {
    let found = paperclip_store::org::people::session(
        &app.store,
        &hash_token(token),
        &paperclip_store::now(),
    )
    .await?;
    let Some((session, user)) = found else {
        return Err(unauthorized("Your session has ended: sign in again")
            .with_details(json!({ "code": "session_expired" })));
    };
    let memberships = paperclip_store::org::members::of_user(&app.store, &user.id).await?;
    Ok(Person {
        user,
        memberships,
        key: None,
        session_id: Some(session.id),
    })
}

pub async fn by_board_key(app: &AppState, token: &str) -> Result<Person, ApiError> {
    let key = paperclip_store::org::board_keys::find_by_hash(
        &app.store,
        &hash_token(token),
        &paperclip_store::now(),
    )
    .await?
    .ok_or_else(|| unauthorized("Invalid, revoked or expired board API key"))?;
    paperclip_store::org::board_keys::touch(&app.store, &key).await?;
    if key.user_id == paperclip_core::actor::LOCAL_BOARD_USER_ID {
        // The local board's keys act as it only where it exists: an instance
        // switched to authenticated mode has no implicit board.
        if app.security.team.authenticated() {
            return Err(unauthorized(
                "This board API key belongs to the local board of a local trusted instance: sign in and make a new key",
            ));
        }
        return local_board(app, Some(key)).await;
    }
    let user = paperclip_store::org::people::get(&app.store, &key.user_id).await?;
    let memberships = paperclip_store::org::members::of_user(&app.store, &user.id).await?;
    Ok(Person {
        user,
        memberships,
        key: Some(key),
        session_id: None,
    })
}

/// The person behind a board caller: the signed-in person (session or board
/// key), or, in local trusted mode, the local board as a person. An agent is
/// no person (401).
pub async fn board_person(app: &AppState, caller: &Caller) -> Result<Person, ApiError> {
    match caller.access() {
        Access::Person(p) => Ok((**p).clone()),
        Access::Everything => local_board(app, None).await,
        Access::Agent => Err(unauthorized("Board authentication required")),
    }
}

/// The local board as upstream has it: the `local-board` person, an
/// administrator of the instance and an owner of every company (its
/// memberships are implied, not stored, so none goes stale as companies come
/// and go).
async fn local_board(app: &AppState, key: Option<BoardKey>) -> Result<Person, ApiError> {
    let mut user = paperclip_store::org::people::local_board(&app.store).await?;
    user.is_instance_admin = true;
    let companies = paperclip_store::org::companies::list(&app.store).await?;
    let memberships = companies
        .into_iter()
        .map(|c| Membership {
            id: format!("{}:{}", user.id, c.id),
            company_id: c.id,
            user_id: user.id.clone(),
            role: Role::Owner,
            status: MembershipStatus::Active,
            created_at: user.created_at.clone(),
            updated_at: user.created_at.clone(),
            user_name: user.name.clone(),
            user_email: user.email.clone(),
        })
        .collect();
    Ok(Person {
        user,
        memberships,
        key,
        session_id: None,
    })
}

/// A write by a browser session must carry the session's CSRF token, which
/// only pages served here are given: another site can make the browser send
/// our cookie, but cannot read the token.
pub fn check_csrf(headers: &HeaderMap, session_token: &str) -> Result<(), ApiError> {
    let sent = crate::extract::header_text(headers, CSRF_HEADER)?;
    let expected = csrf_token(session_token);
    let matches = sent.is_some_and(|sent| {
        sent.len() == expected.len()
            && sent
                .bytes()
                .zip(expected.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    });
    if matches {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "This change needs the page's CSRF token: reload the page and try again",
        )
        .with_details(json!({ "code": "csrf_token_invalid", "header": CSRF_HEADER })))
    }
}
