//! Board API keys: a person's key for scripts and the CLI. Only the SHA-256
//! of a key is stored; the plaintext is returned once, by the request that
//! creates it. A key acts as its user, within the companies it names (all of
//! the user's companies when it names none), and never beyond the user's
//! own memberships.
//!
//! A key may be made with another key (its parent): it lives only while every
//! key above it is live, so revoking or reaching the expiry of a parent ends
//! its children too ([`find_by_hash`] checks the chain; [`revoke`] also marks
//! the children revoked). The route clamps a child's companies and expiry to
//! its parent's.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
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
    /// The key this one was made with (`None`: made by a signed-in session).
    pub parent_key_id: Option<String>,
}

/// How many keys above a key are followed before the chain is refused (a key
/// made by a key made by a key ...; real chains are one or two long).
const MAX_CHAIN: usize = 16;

pub async fn create(
    store: &Store,
    actor: &Actor,
    name: &str,
    key_hash: &str,
    company_ids: &[String],
    expires_at: Option<&str>,
    parent_key_id: Option<&str>,
) -> Result<BoardKey> {
    let user_id = actor
        .user_id()
        .ok_or_else(|| Error::Rule("Only a person can own a board API key".into()))?;
    let mut tx = store.begin().await?;
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO board_api_keys (id, user_id, name, key_hash, created_at, expires_at, \
         parent_key_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&id)
    .bind(user_id)
    .bind(name)
    .bind(key_hash)
    .bind(&ts)
    .bind(expires_at)
    .bind(parent_key_id)
    .execute(tx.conn())
    .await?;
    for company_id in company_ids {
        crate::engine::db::query(
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
                details: json!({ "keyId": id, "name": name, "parentKeyId": parent_key_id }),
            },
        )
        .await?;
    }
    let key = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(key)
}

pub async fn list(store: &Store, user_id: &str) -> Result<Vec<BoardKey>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM board_api_keys WHERE user_id = $1 ORDER BY created_at DESC, id DESC",
    )
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    let pairs: Vec<(String, String)> = crate::engine::db::query_as(
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

/// Revokes a key of the actor and every key made from it (its children, their
/// children, ...), each with its activity entries.
pub async fn revoke(store: &Store, actor: &Actor, key_id: &str) -> Result<BoardKey> {
    let mut tx = store.begin().await?;
    let key = get_in(&mut tx, key_id).await?;
    if actor.user_id() != Some(key.user_id.as_str()) {
        return Err(Error::not_found("API key"));
    }
    let ts = now();
    let mut pending = vec![key];
    while let Some(key) = pending.pop() {
        let children: Vec<(String,)> = crate::engine::db::query_as(
            "SELECT CAST(id AS TEXT) FROM board_api_keys WHERE parent_key_id = $1 ORDER BY 1",
        )
        .bind(&key.id)
        .fetch_all(tx.conn())
        .await?;
        for (child,) in children {
            pending.push(get_in(&mut tx, &child).await?);
        }
        if key.revoked_at.is_some() {
            continue;
        }
        crate::engine::db::query("UPDATE board_api_keys SET revoked_at = $2 WHERE id = $1")
            .bind(&key.id)
            .bind(&ts)
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
                    details: json!({
                        "keyId": key.id,
                        "name": key.name,
                        "withKeyId": (key.id != key_id).then_some(key_id),
                    }),
                },
            )
            .await?;
        }
    }
    let key = get_in(&mut tx, key_id).await?;
    tx.commit().await?;
    Ok(key)
}

/// The live key with this hash at `at` (not revoked, not expired, and every
/// key above it the same), if any.
pub async fn find_by_hash(store: &Store, key_hash: &str, at: &str) -> Result<Option<BoardKey>> {
    let mut tx = store.begin().await?;
    let row = crate::engine::db::query(
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
    let key = match key {
        Some(key) if chain_live(&mut tx, &key, at).await? => Some(key),
        _ => None,
    };
    tx.commit().await?;
    Ok(key)
}

/// Whether every key above `key` is live at `at` (a missing parent, or a
/// chain longer than [`MAX_CHAIN`], is not).
async fn chain_live(tx: &mut Tx, key: &BoardKey, at: &str) -> Result<bool> {
    let mut parent = key.parent_key_id.clone();
    for _ in 0..MAX_CHAIN {
        let Some(id) = parent else {
            return Ok(true);
        };
        let row: Option<(Option<String>,)> = crate::engine::db::query_as(
            "SELECT CAST(parent_key_id AS TEXT) FROM board_api_keys WHERE id = $1 \
             AND user_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $3)",
        )
        .bind(&id)
        .bind(&key.user_id)
        .bind(at)
        .fetch_optional(tx.conn())
        .await?;
        let Some((next,)) = row else {
            return Ok(false);
        };
        parent = next;
    }
    Ok(parent.is_none())
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
        crate::engine::db::query("UPDATE board_api_keys SET last_used_at = $2 WHERE id = $1")
            .bind(&key.id)
            .bind(&ts)
            .execute(tx.conn())
            .await?;
        tx.commit().await?;
    }
    Ok(())
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<BoardKey> {
    let row = crate::engine::db::query("SELECT * FROM board_api_keys WHERE id = $1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("API key"))?;
    map(tx, &row).await
}

async fn map(tx: &mut Tx, row: &DbRow) -> Result<BoardKey> {
    let companies: Vec<(String,)> = crate::engine::db::query_as(
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
        parent_key_id: row.opt_text("parent_key_id")?,
    })
}
