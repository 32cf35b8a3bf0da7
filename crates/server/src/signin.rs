//! Turning a person's credential (a session cookie or a board API key) into
//! who they are and which companies they belong to.

use axum::http::HeaderMap;
use serde_json::json;

use crate::auth::{unauthorized, Person};
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
    let user = paperclip_store::org::people::get(&app.store, &key.user_id).await?;
    let memberships = paperclip_store::org::members::of_user(&app.store, &user.id).await?;
    Ok(Person {
        user,
        memberships,
        key: Some(key),
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
