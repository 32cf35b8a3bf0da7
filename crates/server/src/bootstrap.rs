//! The first administrator of an authenticated instance: until one exists,
//! every start prints a fresh one-time invite link (earlier ones are revoked,
//! so only the newest link printed works).

use std::time::Duration;

use paperclip_core::actor::Actor;
use paperclip_core::team::Role;

use crate::people::{hash_token, new_token, BOOTSTRAP_PREFIX};
use crate::AppState;

const BOOTSTRAP_TTL: Duration = Duration::from_secs(72 * 3600);

/// `(url, expiresAt)` of a new bootstrap invite, or `None` when the instance
/// has an administrator.
pub async fn invite_if_needed(app: &AppState) -> anyhow::Result<Option<(String, String)>> {
    if paperclip_store::org::people::admin_exists(&app.store).await? {
        return Ok(None);
    }
    paperclip_store::org::members::revoke_bootstraps(&app.store).await?;
    let token = new_token(BOOTSTRAP_PREFIX);
    let expires = crate::routes::expiry(BOOTSTRAP_TTL);
    paperclip_store::org::members::create_invite(
        &app.store,
        &Actor::system(),
        None,
        Role::Owner,
        &hash_token(&token),
        &expires,
    )
    .await?;
    let url = format!("{}/invite/{token}", app.security.team.base_url);
    Ok(Some((url, expires)))
}
