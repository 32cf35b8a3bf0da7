//! Agent API keys and the instance signing secret. Only the SHA-256 of a key
//! is stored; the plaintext is returned once, by the request that creates it.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::model::{AgentApiKey, KeyScope};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store};

/// Stores a key for `agent_id` whose token hashes to `key_hash`.
pub async fn create(
    store: &Store,
    actor: &Actor,
    agent_id: &str,
    name: &str,
    key_hash: &str,
) -> Result<AgentApiKey> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(Error::invalid("name", "Name must be 1 to 100 characters"));
    }
    let mut tx = store.begin().await?;
    let agent = crate::org::agents::get_in(&mut tx, agent_id).await?;
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO agent_api_keys (id, company_id, agent_id, name, key_hash, created_by_user_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&id)
    .bind(&agent.company_id)
    .bind(agent_id)
    .bind(name)
    .bind(key_hash)
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &agent.company_id,
            action: Action::AgentKeyCreated,
            entity_type: EntityType::Agent,
            entity_id: agent_id,
            details: json!({ "keyId": id, "name": name }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(AgentApiKey {
        id,
        name: name.to_string(),
        agent_id: agent_id.to_string(),
        company_id: agent.company_id,
        created_at: ts,
        last_used_at: None,
        revoked_at: None,
        scope: KeyScope::STANDARD,
        responsible_user_id: actor.user_id().map(str::to_string),
        token: None,
    })
}

pub async fn list(store: &Store, agent_id: &str) -> Result<Vec<AgentApiKey>> {
    let rows =
        crate::engine::db::query("SELECT * FROM agent_api_keys WHERE agent_id = $1 ORDER BY id")
            .bind(agent_id)
            .fetch_all(store.pool())
            .await?;
    rows.iter().map(map).collect()
}

pub async fn revoke(
    store: &Store,
    actor: &Actor,
    agent_id: &str,
    key_id: &str,
) -> Result<AgentApiKey> {
    let mut tx = store.begin().await?;
    let row =
        crate::engine::db::query("SELECT * FROM agent_api_keys WHERE id = $1 AND agent_id = $2")
            .bind(key_id)
            .bind(agent_id)
            .fetch_optional(tx.conn())
            .await?
            .ok_or_else(|| Error::not_found("API key"))?;
    let key = map(&row)?;
    if key.revoked_at.is_some() {
        return Ok(key);
    }
    crate::engine::db::query("UPDATE agent_api_keys SET revoked_at = $2 WHERE id = $1")
        .bind(key_id)
        .bind(now())
        .execute(tx.conn())
        .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &key.company_id,
            action: Action::AgentKeyRevoked,
            entity_type: EntityType::Agent,
            entity_id: agent_id,
            details: json!({ "keyId": key_id, "name": key.name }),
        },
    )
    .await?;
    let row = crate::engine::db::query("SELECT * FROM agent_api_keys WHERE id = $1")
        .bind(key_id)
        .fetch_one(tx.conn())
        .await?;
    tx.commit().await?;
    map(&row)
}

/// The live (not revoked) key with this hash, if any.
pub async fn find_by_hash(store: &Store, key_hash: &str) -> Result<Option<AgentApiKey>> {
    let row = crate::engine::db::query(
        "SELECT * FROM agent_api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
    )
    .bind(key_hash)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map).transpose()
}

/// Records use at most once a minute, so authenticating is not a write per request.
pub async fn touch(store: &Store, key: &AgentApiKey) -> Result<()> {
    let ts = now();
    let stale = key
        .last_used_at
        .as_deref()
        .is_none_or(|last| last < minute_ago(&ts).as_str());
    if stale {
        let mut tx = store.begin().await?;
        crate::engine::db::query("UPDATE agent_api_keys SET last_used_at = $2 WHERE id = $1")
            .bind(&key.id)
            .bind(&ts)
            .execute(tx.conn())
            .await?;
        tx.commit().await?;
    }
    Ok(())
}

fn minute_ago(ts: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(ts)
        .map(|t| {
            (t - chrono::Duration::seconds(60))
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string()
        })
        .unwrap_or_default()
}

/// The instance secret called `name`, created from `generate` on first use.
/// Concurrent first uses agree: the insert is `ON CONFLICT DO NOTHING` and
/// everyone reads back the stored value.
pub async fn instance_secret(
    store: &Store,
    name: &str,
    generate: impl FnOnce() -> String,
) -> Result<String> {
    let mut tx = store.begin().await?;
    crate::engine::db::query("INSERT INTO instance_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING")
        .bind(name)
        .bind(generate())
        .bind(now())
        .execute(tx.conn())
        .await?;
    let (value,): (String,) =
        crate::engine::db::query_as("SELECT value FROM instance_secrets WHERE name = $1")
            .bind(name)
            .fetch_one(tx.conn())
            .await?;
    tx.commit().await?;
    Ok(value)
}

fn map(row: &DbRow) -> Result<AgentApiKey> {
    Ok(AgentApiKey {
        id: row.text("id")?,
        name: row.text("name")?,
        agent_id: row.text("agent_id")?,
        company_id: row.text("company_id")?,
        created_at: row.text("created_at")?,
        last_used_at: row.opt_text("last_used_at")?,
        revoked_at: row.opt_text("revoked_at")?,
        scope: KeyScope::STANDARD,
        responsible_user_id: row.opt_text("created_by_user_id")?,
        token: None,
    })
}
