//! The audit trail. Every mutation calls [`record`] inside its own
//! transaction, so an entity change and its activity row commit together or
//! not at all.

use crate::db::DbRow;
use paperclip_core::actor::Actor;
use paperclip_core::model::ActivityEntry;
use serde_json::Value;

use crate::row::RowExt;
use crate::{new_id, now, Result, Store, StoreEvent, Tx};

pub struct Entry<'a> {
    pub company_id: &'a str,
    pub action: &'a str,
    pub entity_type: &'a str,
    pub entity_id: &'a str,
    pub details: Value,
}

pub async fn record(tx: &mut Tx, actor: &Actor, entry: Entry<'_>) -> Result<()> {
    let row = ActivityEntry {
        id: new_id(),
        company_id: entry.company_id.to_string(),
        actor_type: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        action: entry.action.to_string(),
        entity_type: entry.entity_type.to_string(),
        entity_id: entry.entity_id.to_string(),
        agent_id: actor.agent_id().map(str::to_string),
        run_id: actor.run_id.clone(),
        details: entry.details,
        created_at: now(),
    };
    crate::db::query(
        "INSERT INTO activity_log (id, company_id, actor_type, actor_id, action, entity_type, \
         entity_id, agent_id, run_id, details, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&row.id)
    .bind(&row.company_id)
    .bind(&row.actor_type)
    .bind(&row.actor_id)
    .bind(&row.action)
    .bind(&row.entity_type)
    .bind(&row.entity_id)
    .bind(row.agent_id.as_deref())
    .bind(row.run_id.as_deref())
    .bind(row.details.to_string())
    .bind(&row.created_at)
    .execute(tx.conn())
    .await?;
    tx.announce(StoreEvent::Activity(row));
    Ok(())
}

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub entity_type: Option<String>,
    pub entity_id: Option<String>,
    pub action: Option<String>,
    pub actor_type: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Return entries older than this entry id (the previous page's last id).
    pub before: Option<String>,
    pub limit: i64,
}

/// Newest first. Ids are time-ordered, so `before` pages without gaps.
pub async fn list(store: &Store, company_id: &str, filter: &Filter) -> Result<Vec<ActivityEntry>> {
    let rows = crate::db::query(
        "SELECT * FROM activity_log WHERE company_id = $1 \
         AND ($2 IS NULL OR entity_type = $2) AND ($3 IS NULL OR entity_id = $3) \
         AND ($4 IS NULL OR action = $4) AND ($5 IS NULL OR actor_type = $5) \
         AND ($6 IS NULL OR agent_id = $6) AND ($7 IS NULL OR run_id = $7) \
         AND ($8 IS NULL OR id < $8) ORDER BY id DESC LIMIT $9",
    )
    .bind(company_id)
    .bind(filter.entity_type.as_deref())
    .bind(filter.entity_id.as_deref())
    .bind(filter.action.as_deref())
    .bind(filter.actor_type.as_deref())
    .bind(filter.agent_id.as_deref())
    .bind(filter.run_id.as_deref())
    .bind(filter.before.as_deref())
    .bind(filter.limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

fn map(row: &DbRow) -> Result<ActivityEntry> {
    Ok(ActivityEntry {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        actor_type: row.text("actor_type")?,
        actor_id: row.text("actor_id")?,
        action: row.text("action")?,
        entity_type: row.text("entity_type")?,
        entity_id: row.text("entity_id")?,
        agent_id: row.opt_text("agent_id")?,
        run_id: row.opt_text("run_id")?,
        details: row.json("details")?,
        created_at: row.text("created_at")?,
    })
}
