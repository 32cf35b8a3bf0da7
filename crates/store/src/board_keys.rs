//! Board API keys: a person's key for scripts and the CLI. Only the SHA-256
//! of a key is stored; the plaintext is returned once, by the request that
//! creates it. A key acts as its user, within the companies it names (all of
//! the user's companies when it names none), and never beyond the user's
//! own memberships.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use serde_json::json;

use crate::activity::{self, Entry};
use crate::db::DbRow;
use crate::row::RowExt;
use crate::{new_id, now, Error, Result, Store, Tx};

#[derive(Debug, Clone)]
pub struct BoardKey {
    pub id: String,
    pub user_id: String,
    pub name: String,
    /// Empty: every company the user belongs to.
    pub company_ids: Vec<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

pub async fn create(
    store: &Store,
    actor: &Actor,
    name: &str,
    key_hash: &str,
    company_ids: &[String],
    expires_at: Option<&str>,
) -> Result<BoardKey> {
    let user_id = actor
        .user_id()
        .ok_or_else(|| Error::Rule("Only a person can own a board API key".into()))?;
    let mut tx = store.begin().await?;
    let id = new_id();
    let ts = now();
    crate::db::query(
        "INSERT INTO board_api_keys (id, user_id, name, key_hash, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(user_id)
    .bind(name)
    .bind(key_hash)
    .bind(&ts)
    .bind(expires_at)
    .execute(tx.conn())
    .await?;
    for company_id in company_ids {
        crate::db::query(
            "INSERT INTO board_api_key_companies (key_id, company_id) VALUES ($1, $2)",
        )
        .bind(&id)
        .bind(company_id)
        .execute(tx.conn())
        .await?;
        activity::record(
            &mut tx,
            actor,
            Entry {
                company_id,
                action: Action::BoardKeyCreated,
                entity_type: EntityType::User,
                entity_id: user_id,
                details: json!({ "keyId": id, "name": name }),
            },
        )
        .await?;
    }
    let key = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(key)
}

pub async fn list(store: &Store, user_id: &str) -> Result<Vec<BoardKey>> {
    let rows = crate::db::query(
        "SELECT * FROM board_api_keys WHERE user_id = $1 ORDER BY created_at DESC, id DESC",
    )
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    let pairs: Vec<(String, String)> = crate::db::query_as(
        "SELECT CAST(k.key_id AS TEXT), CAST(k.company_id AS TEXT) FROM board_api_key_companies k \
         JOIN board_api_keys b ON b.id = k.key_id WHERE b.user_id = $1 ORDER BY 2",
    )
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            let id = row.text("id")?;
            let companies = pairs
                .iter()
                .filter(|(k, _)| *k == id)
                .map(|(_, c)| c.clone())
                .collect();
            build(row, companies)
        })
        .collect()
}

pub async fn revoke(store: &Store, actor: &Actor, key_id: &str) -> Result<BoardKey> {
    let mut tx = store.begin().await?;
    let key = get_in(&mut tx, key_id).await?;
    if actor.user_id() != Some(key.user_id.as_str()) {
        return Err(Error::not_found("API key"));
    }
    if key.revoked_at.is_none() {
        crate::db::query("UPDATE board_api_keys SET revoked_at = $2 WHERE id = $1")
            .bind(key_id)
            .bind(now())
            .execute(tx.conn())
            .await?;
        for company_id in &key.company_ids {
            activity::record(
                &mut tx,
                actor,
                Entry {
                    company_id,
                    action: Action::BoardKeyRevoked,
                    entity_type: EntityType::User,
                    entity_id: &key.user_id,
                    details: json!({ "keyId": key.id, "name": key.name }),
                },
            )
            .await?;
        }
    }
    let key = get_in(&mut tx, key_id).await?;
    tx.commit().await?;
    Ok(key)
}

/// The live key with this hash at `at` (not revoked, not expired), if any.
pub async fn find_by_hash(store: &Store, key_hash: &str, at: &str) -> Result<Option<BoardKey>> {
    let mut tx = store.begin().await?;
    let row = crate::db::query(
        "SELECT * FROM board_api_keys WHERE key_hash = $1 AND revoked_at IS NULL \
         AND (expires_at IS NULL OR expires_at > $2)",
    )
    .bind(key_hash)
    .bind(at)
    .fetch_optional(tx.conn())
    .await?;
    let key = match row {
        Some(row) => Some(map(&mut tx, &row).await?),
        None => None,
    };
    tx.commit().await?;
    Ok(key)
}

/// Records use at most once a minute, so authenticating is not a write per request.
pub async fn touch(store: &Store, key: &BoardKey) -> Result<()> {
    let ts = now();
    let fresh = key.last_used_at.as_deref().is_some_and(|last| {
        chrono::DateTime::parse_from_rfc3339(last)
            .is_ok_and(|t| chrono::Utc::now() - t.to_utc() < chrono::Duration::seconds(60))
    });
    if !fresh {
        let mut tx = store.begin().await?;
        crate::db::query("UPDATE board_api_keys SET last_used_at = $2 WHERE id = $1")
            .bind(&key.id)
            .bind(&ts)
            .execute(tx.conn())
            .await?;
        tx.commit().await?;
    }
    Ok(())
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<BoardKey> {
    let row = crate::db::query("SELECT * FROM board_api_keys WHERE id = $1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("API key"))?;
    map(tx, &row).await
}

async fn map(tx: &mut Tx, row: &DbRow) -> Result<BoardKey> {
    let companies: Vec<(String,)> = crate::db::query_as(
        "SELECT CAST(company_id AS TEXT) FROM board_api_key_companies WHERE key_id = $1 ORDER BY 1",
    )
    .bind(row.text("id")?)
    .fetch_all(tx.conn())
    .await?;
    build(row, companies.into_iter().map(|(c,)| c).collect())
}

fn build(row: &DbRow, company_ids: Vec<String>) -> Result<BoardKey> {
    Ok(BoardKey {
        id: row.text("id")?,
        user_id: row.text("user_id")?,
        name: row.text("name")?,
        company_ids,
        created_at: row.text("created_at")?,
        expires_at: row.opt_text("expires_at")?,
        last_used_at: row.opt_text("last_used_at")?,
        revoked_at: row.opt_text("revoked_at")?,
    })
}
