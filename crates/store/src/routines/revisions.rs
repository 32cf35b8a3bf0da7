//! A routine's revisions. Every change to a routine or its triggers writes
//! one (a snapshot of the routine and its triggers' settings, never a
//! secret) in the same transaction; restoring one applies its snapshot,
//! makes deleted triggers again, and writes a new revision that names it.

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::routine::{Routine, RoutineRevision};
use serde_json::{json, Value};

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::routines::table::{by, get_in, record};
use crate::{new_id, Error, Result, Store, Tx};

/// Writes the routine's next revision from what it and its triggers are now.
pub(crate) async fn write_revision(
    tx: &mut Tx,
    actor: &Actor,
    routine_id: &str,
    summary: &str,
    restored_from: Option<&str>,
) -> Result<String> {
    let routine = get_in(tx, routine_id).await?;
    let triggers = crate::routines::trigger_table::list_in(tx, routine_id).await?;
    // The original's snapshot: the routine's own fields with its ids, env
    // (secrets by reference) and responsible person, not its folder.
    let snapshot = json!({
        "version": 1,
        "routine": {
            "id": routine.id,
            "companyId": routine.company_id,
            "env": routine.env,
            "responsibleUserId": routine.responsible_user_id,
            "title": routine.title,
            "description": routine.description,
            "assigneeAgentId": routine.assignee_agent_id,
            "projectId": routine.project_id,
            "goalId": routine.goal_id,
            "parentIssueId": routine.parent_issue_id,
            "priority": routine.priority,
            "status": routine.status,
            "concurrencyPolicy": routine.concurrency_policy,
            "catchUpPolicy": routine.catch_up_policy,
            "activityGatePolicy": routine.activity_gate_policy,
            "activityGateScope": routine.activity_gate_scope,
            "variables": routine.variables,
        },
        "triggers": triggers.iter().map(|t| json!({
            "id": t.id, "kind": t.kind, "label": t.label, "enabled": t.enabled,
            "cronExpression": t.cron_expression, "timezone": t.timezone,
            "publicId": t.public_id, "signingMode": t.signing_mode, "replayWindowSec": t.replay_window_sec,
        })).collect::<Vec<_>>(),
    });
    let id = new_id();
    let number = routine.latest_revision_number + 1;
    let (agent, user) = by(actor);
    crate::engine::db::query(
        "INSERT INTO routine_revisions (id, company_id, routine_id, revision_number, title, \
         description, snapshot, change_summary, restored_from_revision_id, created_by_agent_id, \
         created_by_user_id, created_by_run_id, created_at, responsible_user_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
    )
    .bind(&id)
    .bind(&routine.company_id)
    .bind(routine_id)
    .bind(number)
    .bind(&routine.title)
    .bind(routine.description.as_deref())
    .bind(snapshot.to_string())
    .bind(summary)
    .bind(restored_from)
    .bind(agent)
    .bind(user)
    .bind(actor.run_id.as_deref())
    .bind(crate::now())
    .bind(routine.responsible_user_id.as_deref())
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE routines SET latest_revision_id = $2, latest_revision_number = $3 WHERE id = $1",
    )
    .bind(routine_id)
    .bind(&id)
    .bind(number)
    .execute(tx.conn())
    .await?;
    crate::routines::description::sync_in(tx, actor, &routine, summary).await?;
    record(
        tx,
        actor,
        &routine.company_id,
        Action::RoutineRevisionCreated,
        EntityType::Routine,
        routine_id,
        json!({ "revisionId": id, "revisionNumber": number }),
    )
    .await?;
    Ok(id)
}

const REVISION_COLUMNS: &str = "id, company_id, routine_id, revision_number, title, description, \
     snapshot, change_summary, restored_from_revision_id, created_by_agent_id, created_by_user_id, \
     created_by_run_id, created_at, responsible_user_id";

/// Newest first, at most 100 (upstream's page).
pub async fn revisions(store: &Store, routine_id: &str) -> Result<Vec<RoutineRevision>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {REVISION_COLUMNS} FROM routine_revisions WHERE routine_id = $1 \
         ORDER BY revision_number DESC LIMIT 100"
    ))
    .bind(routine_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_revision).collect()
}

pub(crate) async fn revision_in(
    tx: &mut Tx,
    routine_id: &str,
    revision_id: &str,
) -> Result<RoutineRevision> {
    let row = crate::engine::db::query(&format!(
        "SELECT {REVISION_COLUMNS} FROM routine_revisions WHERE id = $1 AND routine_id = $2"
    ))
    .bind(revision_id)
    .bind(routine_id)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Routine revision"))?;
    map_revision(&row)
}

/// Puts the routine's own fields back as the snapshot has them (the
/// triggers are [`crate::routines::trigger_table::restore_in`]'s).
pub(crate) async fn restore_fields_in(
    tx: &mut Tx,
    actor: &Actor,
    routine: &Routine,
    snapshot: &Value,
) -> Result<()> {
    let r = &snapshot["routine"];
    let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
    let parse = |k: &str, fallback: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or(fallback)
            .to_string()
    };
    let assignee = text("assigneeAgentId");
    let mut status = parse("status", routine.status.as_str());
    if assignee.is_none() && status == "active" {
        status = "paused".into();
    }
    // An assignee that no longer exists is dropped, not restored dangling.
    let assignee = match assignee {
        Some(agent) => crate::engine::db::query(
            "SELECT 1 FROM agents WHERE id = $1 AND company_id = $2 AND status <> 'terminated'",
        )
        .bind(&agent)
        .bind(&routine.company_id)
        .fetch_optional(tx.conn())
        .await?
        .map(|_| agent),
        None => None,
    };
    if assignee.is_none() && status == "active" {
        status = "paused".into();
    }
    let (agent, user) = by(actor);
    crate::engine::db::query(
        "UPDATE routines SET title = $2, description = $3, assignee_agent_id = $4, \
         priority = $5, status = $6, concurrency_policy = $7, catch_up_policy = $8, \
         variables = $9, updated_by_agent_id = $10, updated_by_user_id = $11, updated_at = $12, \
         activity_gate_policy = $13, activity_gate_scope = $14, env = $15 WHERE id = $1",
    )
    .bind(&routine.id)
    .bind(text("title").unwrap_or_else(|| routine.title.clone()))
    .bind(text("description"))
    .bind(assignee)
    .bind(parse("priority", routine.priority.as_str()))
    .bind(status)
    .bind(parse(
        "concurrencyPolicy",
        routine.concurrency_policy.as_str(),
    ))
    .bind(parse("catchUpPolicy", routine.catch_up_policy.as_str()))
    .bind(r.get("variables").cloned().unwrap_or(json!([])).to_string())
    .bind(agent)
    .bind(user)
    .bind(crate::now())
    .bind(parse(
        "activityGatePolicy",
        routine.activity_gate_policy.as_str(),
    ))
    .bind(parse(
        "activityGateScope",
        routine.activity_gate_scope.as_str(),
    ))
    // A snapshot from before routines had an env restores none, as the
    // original reads one.
    .bind(r.get("env").filter(|e| e.is_object()).map(Value::to_string))
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Applies a revision and writes the revision that records the restore.
pub async fn restore(
    store: &Store,
    actor: &Actor,
    routine_id: &str,
    revision_id: &str,
    fresh: &crate::routines::trigger_table::Fresh<'_>,
    now: DateTime<Utc>,
) -> Result<Restored> {
    let mut tx = store.begin().await?;
    let routine = get_in(&mut tx, routine_id).await?;
    let revision = revision_in(&mut tx, routine_id, revision_id).await?;
    // Restoring what is already current would write a revision that changes
    // nothing (upstream refuses it the same way).
    if routine.latest_revision_id.as_deref() == Some(revision.id.as_str()) {
        return Err(Error::conflict(
            "Selected revision is already the latest revision",
            Some(json!({ "currentRevisionId": revision.id })),
        ));
    }
    restore_fields_in(&mut tx, actor, &routine, &revision.snapshot).await?;
    // Triggers made again are checked against the restored variables.
    let restored = get_in(&mut tx, routine_id).await?;
    let remade = crate::routines::trigger_table::restore_in(
        &mut tx,
        actor,
        &restored,
        &revision.snapshot,
        fresh,
        now,
    )
    .await?;
    let summary = format!("Restored revision {}", revision.revision_number);
    let new_id = write_revision(&mut tx, actor, routine_id, &summary, Some(&revision.id)).await?;
    record(
        &mut tx,
        actor,
        &routine.company_id,
        Action::RoutineRevisionRestored,
        EntityType::Routine,
        routine_id,
        json!({ "restoredFromRevisionId": revision.id,
            "restoredFromRevisionNumber": revision.revision_number, "revisionId": new_id }),
    )
    .await?;
    let after = get_in(&mut tx, routine_id).await?;
    let new_revision = revision_in(&mut tx, routine_id, &new_id).await?;
    tx.commit().await?;
    Ok(Restored {
        routine: after,
        revision: new_revision,
        from_number: revision.revision_number,
        remade,
    })
}

/// A restore's outcome: the routine and the revision it wrote, the number
/// it came back to, and the triggers it made again.
pub struct Restored {
    pub routine: Routine,
    pub revision: paperclip_core::routine::RoutineRevision,
    pub from_number: i64,
    pub remade: Vec<crate::routines::trigger_table::Remade>,
}

fn map_revision(row: &DbRow) -> Result<RoutineRevision> {
    Ok(RoutineRevision {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        routine_id: row.text("routine_id")?,
        revision_number: row.int("revision_number")?,
        title: row.text("title")?,
        description: row.opt_text("description")?,
        snapshot: row.json("snapshot")?,
        change_summary: row.opt_text("change_summary")?,
        restored_from_revision_id: row.opt_text("restored_from_revision_id")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_by_run_id: row.opt_text("created_by_run_id")?,
        responsible_user_id: row.opt_text("responsible_user_id")?,
        created_at: row.text("created_at")?,
    })
}

/// The env a routine's execution task runs with: the one of the revision
/// its run dispatched (the run that made the task, not one coalesced into
/// it), else the routine's own for a run that named no revision. None when
/// the task was not made by a routine.
pub async fn env_of_execution(store: &Store, issue_id: &str) -> Result<Option<Value>> {
    let row = crate::engine::db::query(
        "SELECT rev.snapshot, rt.env FROM routine_runs r \
         JOIN routines rt ON rt.id = r.routine_id \
         LEFT JOIN routine_revisions rev ON rev.id = r.routine_revision_id \
         WHERE r.linked_issue_id = $1 AND r.coalesced_into_run_id IS NULL \
         AND r.status NOT IN ('coalesced', 'skipped') \
         ORDER BY r.created_at, r.id LIMIT 1",
    )
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(match row.opt_json("snapshot")? {
        Some(snapshot) => snapshot["routine"]
            .get("env")
            .filter(|e| e.is_object())
            .cloned(),
        None => row.opt_json("env")?,
    })
}
