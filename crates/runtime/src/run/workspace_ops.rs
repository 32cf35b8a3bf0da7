//! Recording a run's workspace steps as operations (upstream's
//! `workspace_operations`): what was done, how it went, and a log a person
//! can read on the run page. A failure to record is logged, never the run's.

use std::path::Path;

use paperclip_core::model::HeartbeatRun;
use paperclip_core::workspace::ExecutionWorkspace;
pub(crate) use paperclip_core::workspace_ops::human_bytes;
use paperclip_core::workspace_ops::{WorkspaceOperationPhase, WorkspaceOperationStatus};
use paperclip_store::runs::workspace_ops::{self as store_ops, NewOperation};
use serde_json::{json, Value};

use super::RunDeps;
use crate::workspace::{Repair, Worktree, WorktreeOrigin};

/// One ended step, to record.
pub(crate) struct Step {
    pub phase: WorkspaceOperationPhase,
    pub status: WorkspaceOperationStatus,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
    pub cwd: String,
    pub log: String,
    pub metadata: Value,
    pub started_at: String,
}

impl Step {
    pub(crate) fn failed(
        phase: WorkspaceOperationPhase,
        started_at: &str,
        cwd: &Path,
        log: String,
    ) -> Step {
        Step {
            phase,
            status: WorkspaceOperationStatus::Failed,
            command: None,
            exit_code: None,
            cwd: cwd.display().to_string(),
            log,
            metadata: json!({}),
            started_at: started_at.to_string(),
        }
    }
}

pub(crate) async fn record(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    ws: &ExecutionWorkspace,
    step: Step,
) {
    record_for(deps.store, Some(&run.id), ws, step).await
}

/// Records a step on `ws`, of a run or (`run_id` none) of the board or the
/// sweep.
pub(crate) async fn record_for(
    store: &paperclip_store::Store,
    run_id: Option<&str>,
    ws: &ExecutionWorkspace,
    step: Step,
) {
    let op = NewOperation {
        company_id: &ws.company_id,
        execution_workspace_id: &ws.id,
        heartbeat_run_id: run_id,
        issue_id: Some(&ws.source_issue_id),
        phase: step.phase,
        command: step.command.as_deref(),
        cwd: Some(&step.cwd),
        status: step.status,
        exit_code: step.exit_code,
        log: &step.log,
        metadata: step.metadata,
        started_at: &step.started_at,
    };
    if let Err(err) = store_ops::record(store, &op).await {
        tracing::warn!(workspace = %ws.id, error = %err, "recording a workspace operation failed");
    }
}

/// The `worktree_prepare` step of a run: what was found and done.
pub(crate) fn prepared(worktree: &Worktree, repo: &Path, base_ref: &str, started_at: &str) -> Step {
    let dir = worktree.dir.display();
    let branch = &worktree.branch;
    let mut log = String::new();
    for repair in &worktree.repairs {
        log.push_str(&describe_repair(repair));
        log.push('\n');
    }
    let (origin, command) = match worktree.origin {
        WorktreeOrigin::Reused => {
            log.push_str(&format!(
                "Reused the worktree at {dir} on branch {branch}.\n"
            ));
            ("reused", None)
        }
        WorktreeOrigin::ExistingBranch => {
            log.push_str(&format!(
                "Checked out the existing branch {branch} in a new worktree at {dir}.\n"
            ));
            (
                "existing_branch",
                Some(format!("git worktree add {dir} {branch}")),
            )
        }
        WorktreeOrigin::NewBranch => {
            log.push_str(&format!(
                "Made branch {branch} from {base_ref} in a new worktree at {dir}.\n"
            ));
            (
                "new_branch",
                Some(format!("git worktree add -b {branch} {dir} {base_ref}")),
            )
        }
    };
    log.push_str(&format!("HEAD is {}.\n", worktree.head));
    Step {
        phase: WorkspaceOperationPhase::WorktreePrepare,
        status: WorkspaceOperationStatus::Succeeded,
        command,
        exit_code: None,
        cwd: repo.display().to_string(),
        log,
        metadata: json!({
            "origin": origin,
            "branchName": branch,
            "worktreePath": dir.to_string(),
            "head": worktree.head,
            "repairs": worktree.repairs.len(),
        }),
        started_at: started_at.to_string(),
    }
}

fn describe_repair(repair: &Repair) -> String {
    match repair {
        Repair::PrunedStale(dirs) => format!(
            "Repaired: pruned {} registration(s) of worktrees whose directories were gone.",
            dirs.len()
        ),
        Repair::RemovedInterrupted(dir) => format!(
            "Repaired: removed the partial checkout at {} left by an interrupted worktree add.",
            dir.display()
        ),
        Repair::RemovedOrphan(dir) => format!(
            "Repaired: removed {}, a worktree git no longer knew (its commits are on its branch).",
            dir.display()
        ),
    }
}
