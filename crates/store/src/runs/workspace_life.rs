//! An execution workspace's life after it is made: what its task changed
//! against the base (kept per workspace, replaced at each run's end), its
//! disk use, closing it, and which closed tasks' worktrees the sweep may
//! remove.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::workspace::{ChangedFile, ExecutionWorkspace, ExecutionWorkspaceStatus};
use paperclip_core::workspace_ops::{
    TaskWorkspaceChanges, WorkspaceCommit, DEFAULT_DISK_BUDGET_MB, DEFAULT_RETENTION_DAYS,
};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::runs::workspaces::{get, map, COLUMNS};
use crate::{now, Error, Result, Store};

const TASK_COLUMNS: &str = "execution_workspace_id, company_id, issue_id, base_commit, \
     head_commit, files_changed, insertions, deletions, files, patch, truncated, commits, updated_at";

/// Replaces what the task changed with its state at a run's end.
pub async fn record_task_changes(
    store: &Store,
    company_id: &str,
    c: &TaskWorkspaceChanges,
) -> Result<()> {
    let files = serde_json::to_value(&c.files).unwrap_or(Value::Array(Vec::new()));
    let commits = serde_json::to_value(&c.commits).unwrap_or(Value::Array(Vec::new()));
    let mut tx = store.begin().await?;
    crate::engine::db::query(&format!(
        "INSERT INTO workspace_task_changes ({TASK_COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         ON CONFLICT (execution_workspace_id) DO UPDATE SET base_commit = EXCLUDED.base_commit, \
         head_commit = EXCLUDED.head_commit, files_changed = EXCLUDED.files_changed, \
         insertions = EXCLUDED.insertions, deletions = EXCLUDED.deletions, \
         files = EXCLUDED.files, patch = EXCLUDED.patch, truncated = EXCLUDED.truncated, \
         commits = EXCLUDED.commits, updated_at = EXCLUDED.updated_at"
    ))
    .bind(&c.execution_workspace_id)
    .bind(company_id)
    .bind(&c.issue_id)
    .bind(&c.base_commit)
    .bind(&c.head_commit)
    .bind(c.files_changed as i64)
    .bind(c.insertions as i64)
    .bind(c.deletions as i64)
    .bind(files.to_string())
    .bind(&c.patch)
    .bind(c.truncated)
    .bind(commits.to_string())
    .bind(&c.updated_at)
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

/// What the task has changed on its branch, as of its last run's end.
pub async fn task_changes(
    store: &Store,
    execution_workspace_id: &str,
) -> Result<Option<TaskWorkspaceChanges>> {
    let row = crate::engine::db::query(&format!(
        "SELECT {TASK_COLUMNS} FROM workspace_task_changes WHERE execution_workspace_id = $1"
    ))
    .bind(execution_workspace_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map_task).transpose()
}

/// The disk the worktree's files use (its git objects are the
/// repository's), measured at a run's end.
pub async fn set_disk_bytes(store: &Store, id: &str, bytes: u64) -> Result<()> {
    let mut tx = store.begin().await?;
    crate::engine::db::query("UPDATE execution_workspaces SET disk_bytes = $2 WHERE id = $1")
        .bind(id)
        .bind(i64::try_from(bytes).unwrap_or(i64::MAX))
        .execute(tx.conn())
        .await?;
    tx.commit().await
}

/// A company's open workspaces at a glance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub open: u64,
    pub active: u64,
    pub disk_bytes: u64,
}

pub async fn usage(store: &Store, company_id: &str) -> Result<Usage> {
    let row = crate::engine::db::query(
        "SELECT COUNT(*) AS open, \
         CAST(COALESCE(SUM(CASE WHEN status = $2 THEN 1 ELSE 0 END), 0) AS BIGINT) AS active, \
         CAST(COALESCE(SUM(disk_bytes), 0) AS BIGINT) AS disk \
         FROM execution_workspaces WHERE company_id = $1 AND closed_at IS NULL",
    )
    .bind(company_id)
    .bind(ExecutionWorkspaceStatus::Active.as_str())
    .fetch_one(store.pool())
    .await?;
    Ok(Usage {
        open: row.int("open")?.max(0) as u64,
        active: row.int("active")?.max(0) as u64,
        disk_bytes: row.int("disk")?.max(0) as u64,
    })
}

/// A company's bounds on its workspaces, defaults applied: (retention in
/// days, disk budget in bytes).
pub async fn bounds(store: &Store, company_id: &str) -> Result<(i64, u64)> {
    let row = crate::engine::db::query(
        "SELECT workspace_retention_days, workspace_disk_budget_mb FROM companies WHERE id = $1",
    )
    .bind(company_id)
    .fetch_optional(store.pool())
    .await?
    .ok_or_else(|| Error::not_found("Company"))?;
    let days: Option<i64> = DbRow::try_get(&row, "workspace_retention_days")?;
    let mb: Option<i64> = DbRow::try_get(&row, "workspace_disk_budget_mb")?;
    let mb = mb.unwrap_or(DEFAULT_DISK_BUDGET_MB).max(1) as u64;
    Ok((days.unwrap_or(DEFAULT_RETENTION_DAYS), mb * 1024 * 1024))
}

/// Marks the workspace closed (`archived`, its worktree removed) or
/// `cleanup_failed` (still open: the removal can be retried), with the
/// reason, in the activity log. `actor` is the board for a close asked
/// for, the system for the sweep.
pub async fn close(
    store: &Store,
    actor: &Actor,
    id: &str,
    status: ExecutionWorkspaceStatus,
    reason: &str,
) -> Result<ExecutionWorkspace> {
    let ts = now();
    let archived = status == ExecutionWorkspaceStatus::Archived;
    let mut tx = store.begin().await?;
    let updated = crate::engine::db::query(
        "UPDATE execution_workspaces SET status = $2, cleanup_reason = $3, updated_at = $4, \
         closed_at = $5 WHERE id = $1 AND closed_at IS NULL",
    )
    .bind(id)
    .bind(status.as_str())
    .bind(reason)
    .bind(&ts)
    .bind(archived.then_some(&ts))
    .execute(tx.conn())
    .await?;
    if updated.rows_affected() == 0 {
        return Err(Error::conflict("The workspace is already closed", None));
    }
    let row = crate::engine::db::query(
        "SELECT company_id, source_issue_id, branch_name FROM execution_workspaces WHERE id = $1",
    )
    .bind(id)
    .fetch_one(tx.conn())
    .await?;
    let company_id = row.text("company_id")?;
    let action = if archived {
        Action::ExecutionWorkspaceArchived
    } else {
        Action::ExecutionWorkspaceCleanupFailed
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &company_id,
            action,
            entity_type: EntityType::ExecutionWorkspace,
            entity_id: id,
            details: json!({
                "issueId": row.text("source_issue_id")?,
                "branchName": row.text("branch_name")?,
                "reason": reason,
            }),
        },
    )
    .await?;
    tx.commit().await?;
    get(store, id).await
}

/// Renames a workspace (the only field a person edits in place).
pub async fn rename(
    store: &Store,
    actor: &Actor,
    id: &str,
    name: &str,
) -> Result<ExecutionWorkspace> {
    let before = get(store, id).await?;
    if before.name == name {
        return Ok(before);
    }
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE execution_workspaces SET name = $2, updated_at = $3 WHERE id = $1",
    )
    .bind(id)
    .bind(name)
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action: Action::ExecutionWorkspaceUpdated,
            entity_type: EntityType::ExecutionWorkspace,
            entity_id: id,
            details: json!({ "changes": { "name": { "from": before.name, "to": name } } }),
        },
    )
    .await?;
    tx.commit().await?;
    get(store, id).await
}

/// Marks open `active` workspaces idle: called at start, once this
/// instance's lost runs are settled, so a workspace whose task still has a
/// running run is another live instance's and is left alone. The number
/// marked.
pub async fn settle_active(store: &Store) -> Result<u64> {
    let mut tx = store.begin().await?;
    let done = crate::engine::db::query(
        "UPDATE execution_workspaces SET status = $1, updated_at = $2 \
         WHERE status = $3 AND closed_at IS NULL AND NOT EXISTS (SELECT 1 FROM heartbeat_runs r \
         WHERE r.status = 'running' AND r.issue_id = execution_workspaces.source_issue_id)",
    )
    .bind(ExecutionWorkspaceStatus::Idle.as_str())
    .bind(now())
    .bind(ExecutionWorkspaceStatus::Active.as_str())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected())
}

/// Whether a run of the task is queued or running: a workspace is never
/// removed under one.
pub async fn task_has_live_run(store: &Store, issue_id: &str) -> Result<bool> {
    let row = crate::engine::db::query(
        "SELECT COUNT(*) AS n FROM heartbeat_runs \
         WHERE CAST(issue_id AS TEXT) = $1 AND status IN ('queued', 'running')",
    )
    .bind(issue_id)
    .fetch_one(store.pool())
    .await?;
    Ok(row.int("n")? > 0)
}

/// Open workspaces of the company's tasks that were closed (done or
/// cancelled) before `closed_before`, oldest first, at most `limit`.
pub async fn expired(
    store: &Store,
    company_id: &str,
    closed_before: &str,
    limit: i64,
) -> Result<Vec<ExecutionWorkspace>> {
    // One query: the rows in full, not their ids and a read each.
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM execution_workspaces WHERE id IN \
         (SELECT w.id FROM execution_workspaces w JOIN issues i ON i.id = w.source_issue_id \
          WHERE w.company_id = $1 AND w.closed_at IS NULL AND i.status IN ('done', 'cancelled') \
          AND COALESCE(i.completed_at, i.cancelled_at, i.updated_at) < $2 \
          ORDER BY w.last_used_at, w.id LIMIT $3) \
         ORDER BY last_used_at, id"
    ))
    .bind(company_id)
    .bind(closed_before)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Companies with open workspaces, with their retention in days.
pub async fn companies_with_open(store: &Store) -> Result<Vec<(String, i64)>> {
    let rows = crate::engine::db::query(
        "SELECT c.id, c.workspace_retention_days FROM companies c WHERE EXISTS \
         (SELECT 1 FROM execution_workspaces w WHERE w.company_id = c.id AND w.closed_at IS NULL) \
         ORDER BY c.id",
    )
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| {
            let days: Option<i64> = DbRow::try_get(r, "workspace_retention_days")?;
            Ok((r.text("id")?, days.unwrap_or(DEFAULT_RETENTION_DAYS)))
        })
        .collect()
}

fn map_task(row: &DbRow) -> Result<TaskWorkspaceChanges> {
    let files: Vec<ChangedFile> = serde_json::from_value(row.json("files")?)
        .map_err(|e| Error::rule(format!("stored changed files unreadable: {e}")))?;
    let commits: Vec<WorkspaceCommit> = serde_json::from_value(row.json("commits")?)
        .map_err(|e| Error::rule(format!("stored commits unreadable: {e}")))?;
    Ok(TaskWorkspaceChanges {
        execution_workspace_id: row.text("execution_workspace_id")?,
        issue_id: row.text("issue_id")?,
        base_commit: row.text("base_commit")?,
        head_commit: row.text("head_commit")?,
        files_changed: row.int("files_changed")? as u64,
        insertions: row.int("insertions")? as u64,
        deletions: row.int("deletions")? as u64,
        files,
        patch: row.text("patch")?,
        truncated: row.flag("truncated")?,
        commits,
        updated_at: row.text("updated_at")?,
    })
}
