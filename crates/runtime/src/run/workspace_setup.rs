//! A project's setup command (upstream's `setupCommand`), run in a task's
//! worktree when it is made, and again at the next run while its last try
//! failed: the `workspace_provision` operation. A failure fails the run
//! that needed it, with the command's last words.

use std::time::Duration;

use paperclip_core::model::HeartbeatRun;
use paperclip_core::workspace::ExecutionWorkspace;
use paperclip_core::workspace_ops::{WorkspaceOperationPhase, WorkspaceOperationStatus};
use paperclip_store::runs::workspace_ops as store_ops;
use serde_json::json;

use super::workspace_ops::{self as ops, Step};
use super::RunDeps;
use crate::workspace::command::run_in;
use crate::workspace::{Worktree, WorktreeOrigin};

/// How long a setup command may take (an install of dependencies).
pub(crate) const SETUP_LIMIT: Duration = Duration::from_secs(15 * 60);
const PHASE: WorkspaceOperationPhase = WorkspaceOperationPhase::WorkspaceProvision;

/// Runs the setup command if the worktree is new or its last setup failed.
pub(crate) async fn provision(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    ws: &ExecutionWorkspace,
    worktree: &Worktree,
    command: &str,
    identifier: &str,
) -> Result<(), String> {
    let needed = worktree.origin != WorktreeOrigin::Reused
        || store_ops::last_status(deps.store, &ws.id, PHASE)
            .await
            .map_err(|e| format!("could not read the workspace's setup: {e}"))?
            != Some(WorkspaceOperationStatus::Succeeded);
    if !needed {
        return Ok(());
    }
    let started_at = paperclip_store::now();
    let env = vec![
        (
            "PAPERCLIP_WORKSPACE_CWD".to_string(),
            worktree.dir.display().to_string(),
        ),
        (
            "PAPERCLIP_WORKSPACE_BRANCH".to_string(),
            worktree.branch.clone(),
        ),
        (
            "PAPERCLIP_EXECUTION_WORKSPACE_ID".to_string(),
            ws.id.clone(),
        ),
        ("PAPERCLIP_TASK_ID".to_string(), ws.source_issue_id.clone()),
        (
            "PAPERCLIP_TASK_IDENTIFIER".to_string(),
            identifier.to_string(),
        ),
    ];
    let ran = run_in(&worktree.dir, command, &env, SETUP_LIMIT).await;
    let (status, exit_code, log, outcome) = match ran {
        Err(e) => {
            let why = format!("the project's setup command could not be started: {e}");
            (
                WorkspaceOperationStatus::Failed,
                None,
                format!("{why}\n"),
                Err(why),
            )
        }
        Ok(done) if done.succeeded() => (
            WorkspaceOperationStatus::Succeeded,
            Some(0),
            done.output,
            Ok(()),
        ),
        Ok(done) => {
            let how = if done.timed_out {
                format!(
                    "ran past {} minutes and was stopped",
                    SETUP_LIMIT.as_secs() / 60
                )
            } else {
                match done.exit_code {
                    Some(code) => format!("exited {code}"),
                    None => "was killed".to_string(),
                }
            };
            let tail: String = last_lines(&done.output, 5);
            let why = format!(
                "the project's setup command `{command}` {how} in the task's worktree: {tail} \
                 (the workspace_provision operation has its whole log; fix the command on the \
                 project's codebase settings, and the next run tries it again)"
            );
            let code = done.exit_code.map(i64::from);
            (
                WorkspaceOperationStatus::Failed,
                code,
                done.output,
                Err(why),
            )
        }
    };
    let step = Step {
        phase: PHASE,
        status,
        command: Some(command.to_string()),
        exit_code,
        cwd: worktree.dir.display().to_string(),
        log,
        metadata: json!({ "limitSec": SETUP_LIMIT.as_secs() }),
        started_at,
    };
    ops::record(deps, run, ws, step).await;
    outcome
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    let tail = lines[start..].join(" / ");
    if tail.is_empty() {
        "it printed nothing".to_string()
    } else {
        tail
    }
}
