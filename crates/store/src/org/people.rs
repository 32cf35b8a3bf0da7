//! Board users of an authenticated instance and their sign-in sessions.
//! The store keeps what cannot sign anyone in if read: an argon2id hash of a
//! password (made by the server) and the SHA-256 of a session token.

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store};

#[derive(Debug, Clone)]
pub struct BoardUser {
    pub id: String,
    pub email: String,
    pub name: String,
    pub is_instance_admin: bool,
    pub created_at: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub user_id: String,
    pub created_at: String,
    pub expires_at: String,
    pub last_seen_at: String,
}

/// The new user of an accepted invite.
pub struct NewUser<'a> {
    pub email: &'a str,
    pub name: &'a str,
    pub password_hash: &'a str,
}

/// Addresses are compared as typed, but without case or surrounding space.
pub fn normal_email(email: &str) -> String {
    email.trim().to_lowercase()
}

pub async fn count(store: &Store) -> Result<i64> {
    let (n,): (i64,) = crate::engine::db::query_as("SELECT COUNT(*) FROM board_users")
        .fetch_one(store.pool())
        .await?;
    Ok(n)
}

/// Whether the instance has an administrator (its bootstrap is done).
pub async fn admin_exists(store: &Store) -> Result<bool> {
    let row =
        crate::engine::db::query("SELECT id FROM board_users WHERE is_instance_admin = $1 LIMIT 1")
            .bind(1i64)
            .fetch_optional(store.pool())
            .await?;
    Ok(row.is_some())
}

/// `(id, name)` of the given users (unknown ids are left out), in one query.
pub async fn names(store: &Store, ids: &[String]) -> Result<Vec<(String, String)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let sql = match store.backend() {
        crate::Backend::Sqlite => {
            "SELECT id, name FROM board_users WHERE id IN (SELECT value FROM json_each($1))"
        }
        crate::Backend::Postgres => {
            "SELECT id, name FROM board_users WHERE id IN \
             (SELECT jsonb_array_elements_text(CAST($1 AS TEXT)::jsonb))"
        }
    };
    Ok(crate::engine::db::query_as(sql)
        .bind(list)
        .fetch_all(store.pool())
        .await?)
}

pub async fn get(store: &Store, id: &str) -> Result<BoardUser> {
    crate::engine::db::query("SELECT * FROM board_users WHERE id = $1")
        .bind(id)
        .fetch_optional(store.pool())
        .await?
        .map(|r| map_user(&r))
        .transpose()?
        .ok_or_else(|| Error::not_found("User"))
}

/// Upstream's address for its local board person.
pub const LOCAL_BOARD_EMAIL: &str = "local@paperclip.local";

/// The person behind the local board of a local trusted instance (upstream's
/// `local-board`, "Board"), made the first time a route bound to a person
/// needs it. It has no password, so no one signs in as it, and it is no
/// instance administrator in the table: an instance later switched to
/// authenticated mode still needs its own bootstrap.
pub async fn local_board(store: &Store) -> Result<BoardUser> {
    let id = paperclip_core::actor::LOCAL_BOARD_USER_ID;
    match get(store, id).await {
        Err(Error::NotFound(_)) => {}
        found => return found,
    }
    let mut tx = store.begin().await?;
    let ts = now();
    // Two first requests at once: the second one's insert does nothing.
    crate::engine::db::query(
        "INSERT INTO board_users (id, email, name, password_hash, is_instance_admin, created_at, updated_at) \
         VALUES ($1, $2, $3, '', $4, $5, $5) ON CONFLICT DO NOTHING",
    )
    .bind(id)
    .bind(LOCAL_BOARD_EMAIL)
    .bind("Board")
    .bind(0i64)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    get(store, id).await
}

/// The user with this address and their password hash.
pub async fn by_email(store: &Store, email: &str) -> Result<Option<(BoardUser, String)>> {
    let row = crate::engine::db::query("SELECT * FROM board_users WHERE email = $1")
        .bind(normal_email(email))
        .fetch_optional(store.pool())
        .await?;
    row.map(|r| Ok((map_user(&r)?, r.text("password_hash")?)))
        .transpose()
}

/// A new account with no company and no administration.
pub async fn create(store: &Store, user: &NewUser<'_>) -> Result<BoardUser> {
    let mut tx = store.begin().await?;
    let user = insert(&mut tx, user, false).await?;
    tx.commit().await?;
    Ok(user)
}

pub(crate) async fn insert(
    tx: &mut crate::Tx,
    user: &NewUser<'_>,
    instance_admin: bool,
) -> Result<BoardUser> {
    let email = normal_email(user.email);
    let name = user.name.trim();
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO board_users (id, email, name, password_hash, is_instance_admin, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
    )
    .bind(&id)
    .bind(&email)
    .bind(name)
    .bind(user.password_hash)
    .bind(i64::from(instance_admin))
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(|e| match Error::from(e) {
        e if e.is_unique_violation() => Error::conflict(
            "An account with this email exists already: sign in instead",
            Some(serde_json::json!({ "code": "email_taken" })),
        ),
        e => e,
    })?;
    Ok(BoardUser {
        id,
        email,
        name: name.to_string(),
        is_instance_admin: instance_admin,
        created_at: ts,
    })
}

/// Sets a new password hash and ends every other session of the user.
pub async fn set_password(
    store: &Store,
    user_id: &str,
    password_hash: &str,
    keep_session: &str,
) -> Result<()> {
    let mut tx = store.begin().await?;
    let ts = now();
    crate::engine::db::query(
        "UPDATE board_users SET password_hash = $2, updated_at = $3 WHERE id = $1",
    )
    .bind(user_id)
    .bind(password_hash)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE board_sessions SET revoked_at = $3 \
         WHERE user_id = $1 AND id <> $2 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .bind(keep_session)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn update_name(store: &Store, user_id: &str, name: &str) -> Result<BoardUser> {
    let mut tx = store.begin().await?;
    crate::engine::db::query("UPDATE board_users SET name = $2, updated_at = $3 WHERE id = $1")
        .bind(user_id)
        .bind(name.trim())
        .bind(now())
        .execute(tx.conn())
        .await?;
    tx.commit().await?;
    get(store, user_id).await
}

pub async fn create_session(
    store: &Store,
    user_id: &str,
    token_hash: &str,
    expires_at: &str,
    user_agent: Option<&str>,
) -> Result<Session> {
    let mut tx = store.begin().await?;
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO board_sessions (id, user_id, token_hash, created_at, expires_at, last_seen_at, user_agent) \
         VALUES ($1, $2, $3, $4, $5, $4, $6)",
    )
    .bind(&id)
    .bind(user_id)
    .bind(token_hash)
    .bind(&ts)
    .bind(expires_at)
    .bind(user_agent.map(|ua| ua.chars().take(200).collect::<String>()))
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(Session {
        id,
        user_id: user_id.to_string(),
        created_at: ts.clone(),
        expires_at: expires_at.to_string(),
        last_seen_at: ts,
    })
}

/// The live session with this token hash and its user: not revoked and not
/// past its expiry at `at`.
pub async fn session(
    store: &Store,
    token_hash: &str,
    at: &str,
) -> Result<Option<(Session, BoardUser)>> {
    let row = crate::engine::db::query(
        "SELECT s.id AS session_id, s.created_at AS session_created_at, s.expires_at, s.last_seen_at, u.* \
         FROM board_sessions s JOIN board_users u ON u.id = s.user_id \
         WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2",
    )
    .bind(token_hash)
    .bind(at)
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let user = map_user(&row)?;
    Ok(Some((
        Session {
            id: row.text("session_id")?,
            user_id: user.id.clone(),
            created_at: row.text("session_created_at")?,
            expires_at: row.text("expires_at")?,
            last_seen_at: row.text("last_seen_at")?,
        },
        user,
    )))
}

/// Ends the session with this token hash (sign-out); unknown tokens are fine.
pub async fn revoke_session(store: &Store, token_hash: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE board_sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL",
    )
    .bind(token_hash)
    .bind(now())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Ends every session of a user (removed from the instance, or a password reset).
pub async fn revoke_sessions_of(tx: &mut crate::Tx, user_id: &str) -> Result<()> {
    crate::engine::db::query(
        "UPDATE board_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
    )
    .bind(user_id)
    .bind(now())
    .execute(tx.conn())
    .await?;
    Ok(())
}

fn map_user(row: &DbRow) -> Result<BoardUser> {
    Ok(BoardUser {
        id: row.text("id")?,
        email: row.text("email")?,
        name: row.text("name")?,
        is_instance_admin: row.flag("is_instance_admin")?,
        created_at: row.text("created_at")?,
    })
}
