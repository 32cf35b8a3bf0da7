//! Workspace operations (upstream's `workspace_operations`): each git or
//! setup step done on an execution workspace, with its outcome and its log.
//! A step is recorded once, when it has ended: a step cut short by a crash
//! leaves no row, and the repair the next run does is recorded instead.

use paperclip_core::workspace_ops::{
    WorkspaceOperation, WorkspaceOperationLog, WorkspaceOperationPhase, WorkspaceOperationStatus,
};
use serde_json::Value;

use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Result, Store};

/// The most of a step's log that is kept: git's and a setup command's
/// output are short, and a runaway one is cut with a marker.
pub const MAX_LOG_BYTES: usize = 64 * 1024;
/// The most one read of a log answers with.
const READ_MAX: usize = 64 * 1024;

const COLUMNS: &str = "id, company_id, execution_workspace_id, heartbeat_run_id, issue_id, phase, \
     command, cwd, status, exit_code, log, log_bytes, metadata, started_at, finished_at, \
     created_at, updated_at";

/// A step that has ended, to record.
pub struct NewOperation<'a> {
    pub company_id: &'a str,
    pub execution_workspace_id: &'a str,
    pub heartbeat_run_id: Option<&'a str>,
    pub issue_id: Option<&'a str>,
    pub phase: WorkspaceOperationPhase,
    pub command: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub status: WorkspaceOperationStatus,
    pub exit_code: Option<i64>,
    pub log: &'a str,
    pub metadata: Value,
    pub started_at: &'a str,
}

pub async fn record(store: &Store, op: &NewOperation<'_>) -> Result<String> {
    let id = new_id();
    let ts = now();
    let log = bound(op.log);
    let mut tx = store.begin().await?;
    crate::engine::db::query(&format!(
        "INSERT INTO workspace_operations ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15)"
    ))
    .bind(&id)
    .bind(op.company_id)
    .bind(op.execution_workspace_id)
    .bind(op.heartbeat_run_id)
    .bind(op.issue_id)
    .bind(op.phase.as_str())
    .bind(op.command)
    .bind(op.cwd)
    .bind(op.status.as_str())
    .bind(op.exit_code)
    .bind(&log)
    .bind(log.len() as i64)
    .bind(op.metadata.to_string())
    .bind(op.started_at)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// A log cut to [`MAX_LOG_BYTES`] at a character boundary, head and tail
/// kept (the command's start says what it did, its end why it failed).
fn bound(log: &str) -> String {
    if log.len() <= MAX_LOG_BYTES {
        return log.to_string();
    }
    let half = MAX_LOG_BYTES / 2;
    let mut head = half;
    while !log.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = log.len() - half;
    while !log.is_char_boundary(tail) {
        tail += 1;
    }
    let cut = tail - head;
    format!(
        "{}\n[... {cut} bytes cut ...]\n{}",
        &log[..head],
        &log[tail..]
    )
}

pub async fn get(store: &Store, id: &str) -> Result<WorkspaceOperation> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM workspace_operations WHERE id = $1"),
        id,
        map,
        "Workspace operation",
    )
    .await
}

/// A workspace's operations, oldest first (the order they happened in),
/// the last `limit`.
pub async fn of_workspace(
    store: &Store,
    workspace_id: &str,
    limit: i64,
) -> Result<Vec<WorkspaceOperation>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM (SELECT {COLUMNS} FROM workspace_operations \
         WHERE execution_workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2) recent \
         ORDER BY created_at, id"
    ))
    .bind(workspace_id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// How the workspace's last step of `phase` ended, if it had one.
pub async fn last_status(
    store: &Store,
    workspace_id: &str,
    phase: WorkspaceOperationPhase,
) -> Result<Option<WorkspaceOperationStatus>> {
    let row = crate::engine::db::query(
        "SELECT status FROM workspace_operations WHERE execution_workspace_id = $1 \
         AND phase = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(workspace_id)
    .bind(phase.as_str())
    .fetch_optional(store.pool())
    .await?;
    Ok(row.map(|r| r.stored("status")).transpose()?)
}

/// A run's operations, oldest first.
pub async fn of_run(store: &Store, run_id: &str) -> Result<Vec<WorkspaceOperation>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM workspace_operations WHERE CAST(heartbeat_run_id AS TEXT) = $1 \
         ORDER BY created_at, id"
    ))
    .bind(run_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// A run's operations with their logs, oldest first (one query, for the
/// run's page; each log is bounded).
pub async fn of_run_with_logs(
    store: &Store,
    run_id: &str,
) -> Result<Vec<(WorkspaceOperation, String)>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM workspace_operations WHERE CAST(heartbeat_run_id AS TEXT) = $1 \
         ORDER BY created_at, id"
    ))
    .bind(run_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| Ok((map(row)?, row.text("log")?)))
        .collect()
}

/// Part of an operation's log from byte `offset` (at a character boundary
/// at or after it), in upstream's shape.
pub async fn read_log(store: &Store, id: &str, offset: u64) -> Result<WorkspaceOperationLog> {
    let row = crate::engine::db::query("SELECT log FROM workspace_operations WHERE id = $1")
        .bind(id)
        .fetch_optional(store.pool())
        .await?
        .ok_or_else(|| crate::Error::not_found("Workspace operation"))?;
    let log = row.text("log")?;
    let mut start = usize::try_from(offset).unwrap_or(usize::MAX).min(log.len());
    while !log.is_char_boundary(start) {
        start += 1;
    }
    let mut end = start.saturating_add(READ_MAX).min(log.len());
    while !log.is_char_boundary(end) {
        end -= 1;
    }
    Ok(WorkspaceOperationLog {
        operation_id: id.to_string(),
        store: "db".to_string(),
        log_ref: id.to_string(),
        content: log[start..end].to_string(),
        next_offset: (end < log.len()).then_some(end as u64),
    })
}

fn map(row: &DbRow) -> Result<WorkspaceOperation> {
    let id = row.text("id")?;
    Ok(WorkspaceOperation {
        log_ref: id.clone(),
        id,
        company_id: row.text("company_id")?,
        execution_workspace_id: row.text("execution_workspace_id")?,
        heartbeat_run_id: row.opt_text("heartbeat_run_id")?,
        issue_id: row.opt_text("issue_id")?,
        phase: row.stored("phase")?,
        command: row.opt_text("command")?,
        cwd: row.opt_text("cwd")?,
        status: row.stored("status")?,
        exit_code: DbRow::try_get(row, "exit_code")?,
        log_store: "db".to_string(),
        log_bytes: row.int("log_bytes")?,
        metadata: row.json("metadata")?,
        started_at: row.text("started_at")?,
        finished_at: row.opt_text("finished_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_log_keeps_its_head_and_tail() {
        let log = format!("start\n{}\nthe end", "é".repeat(MAX_LOG_BYTES));
        let kept = bound(&log);
        assert!(kept.len() <= MAX_LOG_BYTES + 64);
        assert!(kept.starts_with("start\n"));
        assert!(kept.ends_with("\nthe end"));
        assert!(kept.contains("bytes cut"));
        assert_eq!(bound("short"), "short");
    }
}
