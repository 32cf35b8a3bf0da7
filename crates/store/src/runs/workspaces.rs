//! Execution workspaces (upstream's `execution_workspaces`): the git
//! worktree a task runs in, one open per task (a unique index), made by the
//! runtime at a run's start; and what each run changed there
//! (`run_workspace_changes`, ours). The runtime drives git; this records.

use paperclip_core::workspace::{
    ChangedFile, ExecutionWorkspace, ExecutionWorkspaceMode, ExecutionWorkspaceStatus,
    RunWorkspaceChanges, WorkspaceStrategyType,
};
use serde_json::{json, Value};

use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Error, Result, Store};

pub(crate) const COLUMNS: &str =
    "id, company_id, project_id, project_workspace_id, source_issue_id, mode, \
     strategy_type, name, status, cwd, base_ref, branch_name, provider_type, provider_ref, \
     last_used_at, opened_at, closed_at, metadata, created_at, updated_at";

const CHANGE_COLUMNS: &str = "run_id, company_id, execution_workspace_id, issue_id, from_commit, \
     files_changed, insertions, deletions, files, patch, truncated, created_at";

/// What the runtime opens a workspace with.
pub struct NewExecutionWorkspace<'a> {
    pub company_id: &'a str,
    pub project_id: &'a str,
    pub project_workspace_id: &'a str,
    pub issue_id: &'a str,
    pub name: &'a str,
    pub cwd: &'a str,
    pub base_ref: &'a str,
    pub branch_name: &'a str,
    pub base_commit: &'a str,
}

/// The task's open workspace, if it has one.
pub async fn open_for_issue(store: &Store, issue_id: &str) -> Result<Option<ExecutionWorkspace>> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM execution_workspaces \
         WHERE source_issue_id = $1 AND closed_at IS NULL"
    ))
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map).transpose()
}

/// Records the task's workspace, or returns the one a concurrent first run
/// of the same task recorded a moment before (one open per task).
pub async fn open(store: &Store, new: &NewExecutionWorkspace<'_>) -> Result<ExecutionWorkspace> {
    let id = new_id();
    let ts = now();
    let metadata = json!({ "baseCommit": new.base_commit, "createdByRuntime": true });
    let mut tx = store.begin().await?;
    let inserted = crate::engine::db::query(&format!(
        "INSERT INTO execution_workspaces ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $10, $14, $14, NULL, $15, $14, $14) \
         ON CONFLICT DO NOTHING"
    ))
    .bind(&id)
    .bind(new.company_id)
    .bind(new.project_id)
    .bind(new.project_workspace_id)
    .bind(new.issue_id)
    .bind(ExecutionWorkspaceMode::IsolatedWorkspace.as_str())
    .bind(WorkspaceStrategyType::GitWorktree.as_str())
    .bind(new.name)
    .bind(ExecutionWorkspaceStatus::Active.as_str())
    .bind(new.cwd)
    .bind(new.base_ref)
    .bind(new.branch_name)
    .bind(WorkspaceStrategyType::GitWorktree.as_str())
    .bind(&ts)
    .bind(metadata.to_string())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    if inserted.rows_affected() == 1 {
        return get(store, &id).await;
    }
    // The one-open-per-task index kept a second row out.
    open_for_issue(store, new.issue_id)
        .await?
        .ok_or_else(|| Error::conflict("The task's workspace changed meanwhile", None))
}

/// A run starts in the workspace: it is active and was used now.
pub async fn touch(store: &Store, id: &str) -> Result<()> {
    let ts = now();
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE execution_workspaces SET status = $2, last_used_at = $3, updated_at = $3 \
         WHERE id = $1",
    )
    .bind(id)
    .bind(ExecutionWorkspaceStatus::Active.as_str())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

/// The run that used it ended: idle until the next.
pub async fn idle(store: &Store, id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE execution_workspaces SET status = $2, updated_at = $3 \
         WHERE id = $1 AND status = $4",
    )
    .bind(id)
    .bind(ExecutionWorkspaceStatus::Idle.as_str())
    .bind(now())
    .bind(ExecutionWorkspaceStatus::Active.as_str())
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

pub async fn get(store: &Store, id: &str) -> Result<ExecutionWorkspace> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM execution_workspaces WHERE id = $1"),
        id,
        map,
        "Execution workspace",
    )
    .await
}

/// Upstream's list filters that are served.
#[derive(Default)]
pub struct Filter {
    pub project_id: Option<String>,
    pub issue_id: Option<String>,
    pub status: Option<ExecutionWorkspaceStatus>,
}

/// A company's workspaces, most recently used first, at most `limit`.
pub async fn list_company(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    limit: i64,
) -> Result<Vec<ExecutionWorkspace>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM execution_workspaces WHERE company_id = $1 \
         AND ($2 IS NULL OR CAST(project_id AS TEXT) = $2) \
         AND ($3 IS NULL OR CAST(source_issue_id AS TEXT) = $3) \
         AND ($4 IS NULL OR status = $4) \
         ORDER BY last_used_at DESC, id DESC LIMIT $5"
    ))
    .bind(company_id)
    .bind(filter.project_id.as_deref())
    .bind(filter.issue_id.as_deref())
    .bind(filter.status.map(|s| s.as_str()))
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Records what a run changed (once per run: a repeat is ignored).
pub async fn record_changes(
    store: &Store,
    company_id: &str,
    c: &RunWorkspaceChanges,
) -> Result<()> {
    let files = serde_json::to_value(&c.files).unwrap_or(Value::Array(Vec::new()));
    let mut tx = store.begin().await?;
    crate::engine::db::query(&format!(
        "INSERT INTO run_workspace_changes ({CHANGE_COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (run_id) DO NOTHING"
    ))
    .bind(&c.run_id)
    .bind(company_id)
    .bind(&c.execution_workspace_id)
    .bind(&c.issue_id)
    .bind(&c.from_commit)
    .bind(c.files_changed as i64)
    .bind(c.insertions as i64)
    .bind(c.deletions as i64)
    .bind(files.to_string())
    .bind(&c.patch)
    .bind(c.truncated)
    .bind(&c.created_at)
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

/// What the run changed, if it ran in a workspace and its end was recorded.
pub async fn changes_of_run(store: &Store, run_id: &str) -> Result<Option<RunWorkspaceChanges>> {
    let row = crate::engine::db::query(&format!(
        "SELECT {CHANGE_COLUMNS} FROM run_workspace_changes WHERE run_id = $1"
    ))
    .bind(run_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map_changes).transpose()
}

/// Each run's changes in the workspace, newest first, at most `limit`.
pub async fn changes_of_workspace(
    store: &Store,
    id: &str,
    limit: i64,
) -> Result<Vec<RunWorkspaceChanges>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {CHANGE_COLUMNS} FROM run_workspace_changes WHERE execution_workspace_id = $1 \
         ORDER BY created_at DESC, run_id DESC LIMIT $2"
    ))
    .bind(id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_changes).collect()
}

pub(crate) fn map(row: &DbRow) -> Result<ExecutionWorkspace> {
    Ok(ExecutionWorkspace {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        project_id: row.text("project_id")?,
        project_workspace_id: row.opt_text("project_workspace_id")?.unwrap_or_default(),
        source_issue_id: row.text("source_issue_id")?,
        mode: row.stored("mode")?,
        strategy_type: row.stored("strategy_type")?,
        name: row.text("name")?,
        status: row.stored("status")?,
        cwd: row.text("cwd")?,
        base_ref: row.text("base_ref")?,
        branch_name: row.text("branch_name")?,
        provider_type: row.stored("provider_type")?,
        provider_ref: row.text("provider_ref")?,
        last_used_at: row.text("last_used_at")?,
        opened_at: row.text("opened_at")?,
        closed_at: row.opt_text("closed_at")?,
        metadata: row.json("metadata")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

fn map_changes(row: &DbRow) -> Result<RunWorkspaceChanges> {
    let files: Vec<ChangedFile> = serde_json::from_value(row.json("files")?)
        .map_err(|e| Error::rule(format!("stored changed files unreadable: {e}")))?;
    Ok(RunWorkspaceChanges {
        run_id: row.text("run_id")?,
        execution_workspace_id: row.text("execution_workspace_id")?,
        issue_id: row.text("issue_id")?,
        from_commit: row.text("from_commit")?,
        files_changed: row.int("files_changed")? as u64,
        insertions: row.int("insertions")? as u64,
        deletions: row.int("deletions")? as u64,
        files,
        patch: row.text("patch")?,
        truncated: row.flag("truncated")?,
        created_at: row.text("created_at")?,
    })
}
