//! Routine rows: reading them, the row mapping, and the activity a routine
//! change records. The floor the routine flows stand on.

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{Result, Store, Tx};
use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::routine::{LinkedIssue, Routine};
use serde_json::Value;

pub(crate) const COLUMNS: &str = "id, company_id, project_id, goal_id, parent_issue_id, title, \
     description, assignee_agent_id, priority, status, concurrency_policy, catch_up_policy, \
     variables, latest_revision_id, latest_revision_number, created_by_agent_id, \
     created_by_user_id, updated_by_agent_id, updated_by_user_id, last_triggered_at, \
     last_enqueued_at, created_at, updated_at, activity_gate_policy, activity_gate_scope";

/// What a routine is read with: [`COLUMNS`] (what an insert names; the
/// rest have defaults) and the columns of migration 57.
pub(crate) const READ_COLUMNS: &str = "id, company_id, project_id, goal_id, parent_issue_id, \
     title, description, assignee_agent_id, priority, status, concurrency_policy, \
     catch_up_policy, variables, latest_revision_id, latest_revision_number, \
     created_by_agent_id, created_by_user_id, updated_by_agent_id, updated_by_user_id, \
     last_triggered_at, last_enqueued_at, created_at, updated_at, activity_gate_policy, \
     activity_gate_scope, folder_id, origin_kind, origin_id, env, responsible_user_id";

pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

pub(crate) fn by(actor: &Actor) -> (Option<&str>, Option<&str>) {
    match actor.kind {
        ActorKind::Agent => (Some(actor.id.as_str()), None),
        ActorKind::User => (None, Some(actor.id.as_str())),
        ActorKind::System => (None, None),
    }
}

pub async fn get(store: &Store, id: &str) -> Result<Routine> {
    one_by_id(
        store.pool(),
        &format!("SELECT {READ_COLUMNS} FROM routines WHERE id = $1"),
        id,
        map,
        "Routine",
    )
    .await
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Routine> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {READ_COLUMNS} FROM routines WHERE id = $1"),
        id,
        map,
        "Routine",
    )
    .await
}

pub async fn list(
    store: &Store,
    company_id: &str,
    project_id: Option<&str>,
) -> Result<Vec<Routine>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {READ_COLUMNS} FROM routines WHERE company_id = $1 \
         AND ($2 IS NULL OR CAST(project_id AS TEXT) = $2) ORDER BY created_at DESC, id DESC"
    ))
    .bind(company_id)
    .bind(project_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// The routine's latest execution whose task is still open.
pub async fn active_issue(store: &Store, routine_id: &str) -> Result<Option<LinkedIssue>> {
    let row = crate::engine::db::query(
        "SELECT i.id, i.identifier, i.title, i.status, i.priority, i.updated_at \
         FROM routine_runs r JOIN issues i ON i.id = r.linked_issue_id \
         WHERE r.routine_id = $1 AND i.status IN ('backlog', 'todo', 'in_progress', \
         'in_review', 'blocked') ORDER BY r.created_at DESC LIMIT 1",
    )
    .bind(routine_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map_linked).transpose()
}

/// [`active_issue`] of every routine of the company in one query: the
/// newest open execution task per routine id.
pub async fn active_issues_of_company(
    store: &Store,
    company_id: &str,
) -> Result<std::collections::HashMap<String, LinkedIssue>> {
    let rows = crate::engine::db::query(
        "SELECT r.routine_id, i.id, i.identifier, i.title, i.status, i.priority, i.updated_at \
         FROM routine_runs r JOIN issues i ON i.id = r.linked_issue_id \
         WHERE r.company_id = $1 AND i.status IN ('backlog', 'todo', 'in_progress', \
         'in_review', 'blocked') ORDER BY r.created_at DESC",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    let mut out = std::collections::HashMap::new();
    for row in &rows {
        // Rows come newest first: the first one seen per routine wins.
        if let std::collections::hash_map::Entry::Vacant(slot) = out.entry(row.text("routine_id")?)
        {
            slot.insert(map_linked(row)?);
        }
    }
    Ok(out)
}

pub(crate) fn map_linked(row: &DbRow) -> Result<LinkedIssue> {
    Ok(LinkedIssue {
        id: row.text("id")?,
        identifier: row.text("identifier")?,
        title: row.text("title")?,
        status: row.stored("status")?,
        priority: row.stored("priority")?,
        updated_at: row.text("updated_at")?,
    })
}

pub(crate) async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    entity_type: EntityType,
    id: &str,
    details: Value,
) -> Result<()> {
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action,
            entity_type,
            entity_id: id,
            details,
        },
    )
    .await
}

pub(crate) fn map(row: &DbRow) -> Result<Routine> {
    let variables = row.json("variables")?;
    Ok(Routine {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        project_id: row.opt_text("project_id")?,
        folder_id: row.opt_text("folder_id")?,
        goal_id: row.opt_text("goal_id")?,
        parent_issue_id: row.opt_text("parent_issue_id")?,
        title: row.text("title")?,
        description: row.opt_text("description")?,
        assignee_agent_id: row.opt_text("assignee_agent_id")?,
        priority: row.stored("priority")?,
        status: row.stored("status")?,
        concurrency_policy: row.stored("concurrency_policy")?,
        catch_up_policy: row.stored("catch_up_policy")?,
        activity_gate_policy: row.stored("activity_gate_policy")?,
        activity_gate_scope: row.stored("activity_gate_scope")?,
        origin_kind: row.stored("origin_kind")?,
        origin_id: row.opt_text("origin_id")?,
        variables: serde_json::from_value(variables).unwrap_or_default(),
        env: row.opt_json("env")?,
        latest_revision_id: row.opt_text("latest_revision_id")?,
        latest_revision_number: row.int("latest_revision_number")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        responsible_user_id: row.opt_text("responsible_user_id")?,
        updated_by_agent_id: row.opt_text("updated_by_agent_id")?,
        updated_by_user_id: row.opt_text("updated_by_user_id")?,
        last_triggered_at: row.opt_text("last_triggered_at")?,
        last_enqueued_at: row.opt_text("last_enqueued_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
