//! The audit trail. Every mutation calls [`record`] inside its own
//! transaction, so an entity change and its activity row commit together or
//! not at all.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::model::ActivityEntry;
use serde_json::Value;

use crate::engine::row::RowExt;
use crate::{new_id, now, Result, Store, StoreEvent, Tx};

pub struct Entry<'a> {
    pub company_id: &'a str,
    pub action: Action,
    pub entity_type: EntityType,
    pub entity_id: &'a str,
    pub details: Value,
}

pub async fn record(tx: &mut Tx, actor: &Actor, entry: Entry<'_>) -> Result<()> {
    insert(tx, entry_row(actor, entry)).await
}

/// The row [`record`] writes, for a caller that writes it in a statement of
/// its own (and then calls [`announce`]).
/// An entry about a task, its details carrying the task's identifier (what
/// a person reads in the feed).
pub(crate) async fn on_issue(
    tx: &mut Tx,
    actor: &Actor,
    issue: &paperclip_core::model::Issue,
    action: Action,
    mut details: Value,
) -> Result<()> {
    details["identifier"] = Value::from(issue.identifier.clone());
    record(
        tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details,
        },
    )
    .await
}

pub(crate) fn entry_row(actor: &Actor, entry: Entry<'_>) -> ActivityEntry {
    ActivityEntry {
        id: new_id(),
        company_id: entry.company_id.to_string(),
        actor_type: actor.kind.as_str().to_string(),
        actor_id: actor.id.clone(),
        action: entry.action.as_str().to_string(),
        entity_type: entry.entity_type.as_str().to_string(),
        entity_id: entry.entity_id.to_string(),
        agent_id: actor.agent_id().map(str::to_string),
        run_id: actor.run_id.clone(),
        responsible_user_id: actor.user_id().map(str::to_string),
        details: entry.details,
        created_at: now(),
    }
}

/// Tells subscribers of an entry written by its caller, once it commits.
pub(crate) fn announce(tx: &mut Tx, row: ActivityEntry) {
    tx.announce(StoreEvent::Activity(row));
}

pub(crate) async fn insert(tx: &mut Tx, row: ActivityEntry) -> Result<()> {
    crate::engine::db::query(
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
/// Only the filters given become conditions: `($n IS NULL OR col = $n)`
/// hides the entity index from the planner, and one task's history among
/// millions of rows was then a scan of the company's (4 s at 1.3M rows).
pub async fn list(store: &Store, company_id: &str, filter: &Filter) -> Result<Vec<ActivityEntry>> {
    let mut sql = String::from("SELECT * FROM activity_log WHERE company_id = $1");
    let mut values: Vec<&str> = Vec::new();
    for (column, op, value) in [
        ("entity_type", "=", &filter.entity_type),
        ("entity_id", "=", &filter.entity_id),
        ("action", "=", &filter.action),
        ("actor_type", "=", &filter.actor_type),
        ("agent_id", "=", &filter.agent_id),
        ("run_id", "=", &filter.run_id),
        ("id", "<", &filter.before),
    ] {
        if let Some(value) = value {
            values.push(value);
            sql.push_str(&format!(" AND {column} {op} ${}", values.len() + 1));
        }
    }
    sql.push_str(&format!(" ORDER BY id DESC LIMIT ${}", values.len() + 2));
    let mut query = crate::engine::db::query(&sql).bind(company_id);
    for value in values {
        query = query.bind(value);
    }
    let rows = query.bind(filter.limit).fetch_all(store.pool()).await?;
    rows.iter().map(map).collect()
}

fn map(row: &DbRow) -> Result<ActivityEntry> {
    let (actor_type, actor_id) = (row.text("actor_type")?, row.text("actor_id")?);
    Ok(ActivityEntry {
        responsible_user_id: ActivityEntry::responsible_of(&actor_type, &actor_id),
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        actor_type,
        actor_id,
        action: row.text("action")?,
        entity_type: row.text("entity_type")?,
        entity_id: row.text("entity_id")?,
        agent_id: row.opt_text("agent_id")?,
        run_id: row.opt_text("run_id")?,
        details: row.json("details")?,
        created_at: row.text("created_at")?,
    })
}
