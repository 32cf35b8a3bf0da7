//! A run's end in its worktree: what it left is committed on the task
//! branch (so the next run starts from it and nothing is lost when the
//! worktree is removed), what it changed is recorded, per run and for the
//! whole task against its base, the worktree's disk use is measured, and
//! the branch is the task's work product. Each failure here is logged and
//! recorded as a failed operation, never the run's: the work is on disk
//! whatever the record says.

use paperclip_core::actor::Actor;
use paperclip_core::model::HeartbeatRun;
use paperclip_core::work_product::{
    NewWorkProduct, WorkProductPatch, WorkProductStatus, WorkProductType,
};
use paperclip_core::workspace::RunWorkspaceChanges;
use paperclip_core::workspace_ops::{
    change_summary, TaskWorkspaceChanges, WorkspaceCommit, WorkspaceOperationPhase,
    WorkspaceOperationStatus,
};
use paperclip_store::runs::workspace_life as life;
use paperclip_store::runs::workspaces as store_ws;
use serde_json::json;

use super::workspace::{changed_file, Bound, MAX_PATCH_BYTES};
use super::workspace_ops::{self as ops, Step};
use super::RunDeps;
use crate::workspace::{Author, Diff};

/// Commits listed with a task's changes: the newest, enough to review.
const MAX_COMMITS: usize = 50;
/// The provider of the branch work product: the repository itself.
const GIT_PROVIDER: &str = "git";

pub(crate) async fn record(deps: &RunDeps<'_>, run: &HeartbeatRun, bound: &Bound, agent: &str) {
    let ws = &bound.workspace;
    snapshot(deps, run, bound, agent).await;
    match deps
        .workspaces
        .diff(&bound.dir, &bound.start_commit, MAX_PATCH_BYTES)
        .await
    {
        Ok(diff) => {
            let changes = run_changes(run, bound, diff);
            if let Err(err) = store_ws::record_changes(deps.store, &run.company_id, &changes).await
            {
                tracing::warn!(run = %run.id, error = %err, "recording the run's changes failed");
            }
        }
        Err(err) => tracing::warn!(run = %run.id, error = %err, "reading the run's changes failed"),
    }
    let task = task_changes(deps, bound).await;
    if let Some(task) = &task {
        if let Err(err) = life::record_task_changes(deps.store, &run.company_id, task).await {
            tracing::warn!(run = %run.id, error = %err, "recording the task's changes failed");
        }
        branch_product(deps, run, bound, task).await;
    }
    let bytes = deps.workspaces.disk_usage(&bound.dir).await;
    if let Err(err) = life::set_disk_bytes(deps.store, &ws.id, bytes).await {
        tracing::warn!(run = %run.id, error = %err, "recording the workspace's disk use failed");
    }
    if let Err(err) = store_ws::idle(deps.store, &ws.id).await {
        tracing::warn!(run = %run.id, error = %err, "marking the workspace idle failed");
    }
}

/// Commits what the run left (the `workspace_finalize` operation).
async fn snapshot(deps: &RunDeps<'_>, run: &HeartbeatRun, bound: &Bound, agent: &str) {
    let started_at = paperclip_store::now();
    let short = run.id.get(..8).unwrap_or(&run.id);
    let message = format!("{}: work of run {short} by {agent}", bound.identifier);
    let author = Author {
        name: format!("{agent} (Paperclip)"),
        email: format!("agent-{}@paperclip.invalid", run.agent_id),
    };
    let made = deps
        .workspaces
        .commit_snapshot(&bound.dir, &message, &author)
        .await;
    let cwd = bound.dir.display().to_string();
    let step = match made {
        Ok(Some(commit)) => Step {
            phase: WorkspaceOperationPhase::WorkspaceFinalize,
            status: WorkspaceOperationStatus::Succeeded,
            command: Some("git add -A && git commit".to_string()),
            exit_code: None,
            cwd,
            log: format!(
                "Committed what the run left as {commit} on {}: \"{message}\".\n",
                bound.workspace.branch_name
            ),
            metadata: json!({ "commit": commit }),
            started_at,
        },
        Ok(None) => Step {
            phase: WorkspaceOperationPhase::WorkspaceFinalize,
            status: WorkspaceOperationStatus::Skipped,
            command: None,
            exit_code: None,
            cwd,
            log: "Nothing uncommitted to commit.\n".to_string(),
            metadata: json!({}),
            started_at,
        },
        Err(err) => {
            tracing::warn!(run = %run.id, error = %err, "committing the run's work failed");
            let log = format!(
                "Could not commit what the run left (it is still in the worktree): {err}\n"
            );
            Step::failed(
                WorkspaceOperationPhase::WorkspaceFinalize,
                &started_at,
                &bound.dir,
                log,
            )
        }
    };
    ops::record(deps, run, &bound.workspace, step).await;
}

fn run_changes(run: &HeartbeatRun, bound: &Bound, diff: Diff) -> RunWorkspaceChanges {
    RunWorkspaceChanges {
        run_id: run.id.clone(),
        execution_workspace_id: bound.workspace.id.clone(),
        issue_id: bound.workspace.source_issue_id.clone(),
        from_commit: diff.from_commit,
        files_changed: diff.files.len() as u64,
        insertions: diff.insertions,
        deletions: diff.deletions,
        files: diff.files.into_iter().map(changed_file).collect(),
        patch: diff.patch,
        truncated: diff.truncated,
        created_at: paperclip_store::now(),
    }
}

/// The task's branch against where it forked from its base.
async fn task_changes(deps: &RunDeps<'_>, bound: &Bound) -> Option<TaskWorkspaceChanges> {
    let ws = &bound.workspace;
    let fallback = ws
        .metadata
        .get("baseCommit")
        .and_then(|v| v.as_str())
        .unwrap_or(&bound.start_commit)
        .to_string();
    let history = deps
        .workspaces
        .history(&bound.dir, &ws.base_ref, &fallback, MAX_COMMITS)
        .await;
    let history = match history {
        Ok(history) => history,
        Err(err) => {
            tracing::warn!(workspace = %ws.id, error = %err, "reading the task's commits failed");
            return None;
        }
    };
    let diff = deps
        .workspaces
        .diff(&bound.dir, &history.fork_commit, MAX_PATCH_BYTES)
        .await;
    let diff = match diff {
        Ok(diff) => diff,
        Err(err) => {
            tracing::warn!(workspace = %ws.id, error = %err, "reading the task's changes failed");
            return None;
        }
    };
    let head = deps.workspaces.head(&bound.dir).await.unwrap_or_default();
    Some(TaskWorkspaceChanges {
        execution_workspace_id: ws.id.clone(),
        issue_id: ws.source_issue_id.clone(),
        base_commit: diff.from_commit,
        head_commit: head,
        files_changed: diff.files.len() as u64,
        insertions: diff.insertions,
        deletions: diff.deletions,
        files: diff.files.into_iter().map(changed_file).collect(),
        patch: diff.patch,
        truncated: diff.truncated,
        commits: history
            .commits
            .into_iter()
            .map(|c| WorkspaceCommit {
                sha: c.sha,
                subject: c.subject,
                author_name: c.author_name,
                committed_at: c.committed_at,
            })
            .collect(),
        updated_at: paperclip_store::now(),
    })
}

/// The task branch as the task's work product, once it has changes: made
/// at the first such run's end, its summary kept current after.
async fn branch_product(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    bound: &Bound,
    task: &TaskWorkspaceChanges,
) {
    if task.files_changed == 0 && task.commits.is_empty() {
        return;
    }
    let ws = &bound.workspace;
    let summary = format!(
        "{} on {} ({} commit{} ahead of {})",
        change_summary(task.files_changed, task.insertions, task.deletions),
        ws.branch_name,
        task.commits.len(),
        if task.commits.len() == 1 { "" } else { "s" },
        ws.base_ref,
    );
    let metadata = json!({
        "branchName": ws.branch_name, "baseRef": ws.base_ref, "headCommit": task.head_commit,
        "worktreePath": ws.cwd, "filesChanged": task.files_changed,
        "insertions": task.insertions, "deletions": task.deletions,
    });
    let store = deps.store;
    let actor = Actor::system();
    let existing = match paperclip_store::thread::work_products::list(store, &ws.source_issue_id)
        .await
    {
        Ok(list) => list.into_iter().find(|p| {
            p.kind == WorkProductType::Branch
                && p.provider == GIT_PROVIDER
                && p.execution_workspace_id.as_deref() == Some(ws.id.as_str())
        }),
        Err(err) => {
            tracing::warn!(run = %run.id, error = %err, "reading the task's work products failed");
            return;
        }
    };
    let done = match existing {
        Some(product) => {
            let patch = WorkProductPatch {
                summary: Some(Some(summary)),
                metadata: Some(Some(metadata)),
                ..WorkProductPatch::default()
            };
            paperclip_store::thread::work_products::update(store, &actor, &product.id, &patch)
                .await
                .map(|_| ())
        }
        None => {
            let issue = match paperclip_store::issues::get(store, &ws.source_issue_id).await {
                Ok(issue) => issue,
                Err(err) => {
                    tracing::warn!(run = %run.id, error = %err, "reading the task failed");
                    return;
                }
            };
            let new = NewWorkProduct {
                kind: WorkProductType::Branch,
                provider: GIT_PROVIDER.to_string(),
                title: ws.branch_name.clone(),
                project_id: Some(ws.project_id.clone()),
                execution_workspace_id: Some(ws.id.clone()),
                runtime_service_id: None,
                external_id: Some(ws.branch_name.clone()),
                url: None,
                summary: Some(summary),
                metadata: Some(metadata),
                status: Some(WorkProductStatus::Active),
                review_state: None,
                is_primary: Some(true),
                health_status: None,
                created_by_run_id: Some(run.id.clone()),
            };
            paperclip_store::thread::work_products::create(store, &actor, &issue, &new)
                .await
                .map(|_| ())
        }
    };
    if let Err(err) = done {
        tracing::warn!(run = %run.id, error = %err, "recording the branch work product failed");
    }
}
