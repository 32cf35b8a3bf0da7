//! Closing execution workspaces, by the board or by the retention sweep,
//! and what closing one would lose.
//!
//! Closing never loses work: what is uncommitted in the worktree is
//! committed on the task branch first, then the worktree is removed and
//! git's registry pruned; the branch is deleted only when its base already
//! has all of it. Each step is a recorded `worktree_cleanup` operation. A
//! workspace is never closed while a run of its task is queued or running.
//!
//! The sweep runs once at start and then every [`SWEEP_INTERVAL`], on the
//! routines' clock (`--test-clock` moves it; the test clock's route runs a
//! pass). It removes the worktrees of tasks closed (done or cancelled) more
//! than the company's retention ago, and is idempotent and restart-safe: a
//! removal is idempotent in git, and the row is marked only after it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use paperclip_core::actor::Actor;
use paperclip_core::workspace::{ExecutionWorkspace, ExecutionWorkspaceStatus};
use paperclip_core::workspace_ops::{
    CloseLinkedIssue, CloseReadiness, CloseReadinessGit, CloseState, DeliveryState, PlannedAction,
    WorkspaceOperationPhase, WorkspaceOperationStatus,
};
use paperclip_store::runs::workspace_life as life;
use paperclip_store::Store;
use serde_json::json;

use crate::run::workspace_ops::{record_for, Step};
use crate::workspace::{Author, BranchFate, Workspaces};

pub const SWEEP_INTERVAL: Duration = Duration::from_secs(3600);
/// Workspaces closed per company per pass: the rest wait for the next.
const BATCH: i64 = 200;
/// How long a project's cleanup command may take.
const CLEANUP_LIMIT: Duration = Duration::from_secs(5 * 60);

/// Why a workspace was not closed.
#[derive(Debug)]
pub enum CloseError {
    /// A run of its task is queued or running.
    Busy,
    /// Already closed.
    Closed,
    /// Git failed; the workspace is marked `cleanup_failed` with this.
    Failed(String),
    Store(paperclip_store::Error),
}

impl From<paperclip_store::Error> for CloseError {
    fn from(e: paperclip_store::Error) -> CloseError {
        CloseError::Store(e)
    }
}

/// The repository a workspace's worktree belongs to: its project's
/// declared one, else (the declaration was removed) the one the worktree
/// itself names.
async fn repository(store: &Store, ws: &ExecutionWorkspace) -> Option<PathBuf> {
    if let Ok(declared) =
        paperclip_store::org::workspaces::get(store, &ws.project_workspace_id).await
    {
        if let Some(cwd) = declared.cwd {
            return Some(PathBuf::from(cwd));
        }
    }
    crate::workspace::repository_root(Path::new(&ws.cwd))
        .await
        .ok()
}

/// The project's cleanup command, if it declares one.
async fn cleanup_command(store: &Store, ws: &ExecutionWorkspace) -> Option<String> {
    paperclip_store::org::workspaces::get(store, &ws.project_workspace_id)
        .await
        .ok()
        .and_then(|declared| declared.cleanup_command)
}

/// Runs the cleanup command in the worktree; how it went goes to `log`.
/// A failure does not stop the removal: the work is already committed.
async fn cleanup(dir: &Path, command: &str, ws: &ExecutionWorkspace, log: &mut String) {
    let env = vec![
        ("PAPERCLIP_WORKSPACE_CWD".to_string(), ws.cwd.clone()),
        (
            "PAPERCLIP_WORKSPACE_BRANCH".to_string(),
            ws.branch_name.clone(),
        ),
        (
            "PAPERCLIP_EXECUTION_WORKSPACE_ID".to_string(),
            ws.id.clone(),
        ),
    ];
    log.push_str(&format!("$ {command}\n"));
    match crate::workspace::command::run_in(dir, command, &env, CLEANUP_LIMIT).await {
        Ok(done) => {
            log.push_str(&done.output);
            if !done.output.is_empty() && !done.output.ends_with('\n') {
                log.push('\n');
            }
            if !done.succeeded() {
                log.push_str(&format!(
                    "The cleanup command did not succeed ({}); removing the worktree anyway.\n",
                    match (done.timed_out, done.exit_code) {
                        (true, _) => "it ran too long".to_string(),
                        (false, Some(code)) => format!("exit {code}"),
                        (false, None) => "killed".to_string(),
                    }
                ));
            }
        }
        Err(e) => log.push_str(&format!("The cleanup command could not be started: {e}\n")),
    }
}

pub async fn close(
    store: &Store,
    workspaces: &Workspaces,
    actor: &Actor,
    ws: &ExecutionWorkspace,
    reason: &str,
) -> Result<ExecutionWorkspace, CloseError> {
    if ws.closed_at.is_some() {
        return Err(CloseError::Closed);
    }
    if life::task_has_live_run(store, &ws.source_issue_id).await? {
        return Err(CloseError::Busy);
    }
    let started_at = paperclip_store::now();
    let dir = PathBuf::from(&ws.cwd);
    let outcome = remove(store, workspaces, ws, &dir).await;
    let (status, log, result) = match outcome {
        Ok(log) => (ExecutionWorkspaceStatus::Archived, log, Ok(())),
        Err(why) => (
            ExecutionWorkspaceStatus::CleanupFailed,
            format!("{why}\n"),
            Err(why),
        ),
    };
    let step = Step {
        phase: WorkspaceOperationPhase::WorktreeCleanup,
        status: if result.is_ok() {
            WorkspaceOperationStatus::Succeeded
        } else {
            WorkspaceOperationStatus::Failed
        },
        command: Some(format!("git worktree remove --force {}", ws.cwd)),
        exit_code: None,
        cwd: ws.cwd.clone(),
        log,
        metadata: json!({ "reason": reason }),
        started_at,
    };
    record_for(store, None, ws, step).await;
    let reason = match &result {
        Ok(()) => reason.to_string(),
        Err(why) => format!("{reason}; cleanup failed: {why}"),
    };
    let closed = life::close(store, actor, &ws.id, status, &reason).await?;
    match result {
        Ok(()) => Ok(closed),
        Err(why) => Err(CloseError::Failed(why)),
    }
}

/// Commits what is left, removes the worktree; the log of what was done.
async fn remove(
    store: &Store,
    workspaces: &Workspaces,
    ws: &ExecutionWorkspace,
    dir: &Path,
) -> Result<String, String> {
    let mut log = String::new();
    let repo = repository(store, ws)
        .await
        .ok_or_else(|| "the repository of the worktree is gone".to_string())?;
    if dir.join(".git").exists() {
        let author = Author {
            name: "Paperclip".to_string(),
            email: "paperclip@paperclip.invalid".to_string(),
        };
        let message = format!("Uncommitted work kept when {} was closed", ws.branch_name);
        match workspaces.commit_snapshot(dir, &message, &author).await {
            Ok(Some(commit)) => log.push_str(&format!(
                "Committed uncommitted work as {commit} on {} before removing.\n",
                ws.branch_name
            )),
            Ok(None) => {}
            Err(e) => {
                return Err(format!(
                    "could not commit the worktree's uncommitted work: {e}"
                ))
            }
        }
    }
    if dir.join(".git").exists() {
        if let Some(command) = cleanup_command(store, ws).await {
            cleanup(dir, &command, ws, &mut log).await;
        }
    }
    let removal = workspaces
        .remove_worktree(&repo, dir, &ws.branch_name, Some(&ws.base_ref))
        .await
        .map_err(|e| format!("could not remove the worktree: {e}"))?;
    log.push_str(if removal.worktree_removed {
        "Removed the worktree and pruned git's registry.\n"
    } else {
        "The worktree was already gone.\n"
    });
    log.push_str(&match removal.branch {
        BranchFate::Deleted => format!(
            "Deleted branch {}: {} has all of it.\n",
            ws.branch_name, ws.base_ref
        ),
        BranchFate::KeptUnmerged => format!(
            "Kept branch {}: it has commits {} does not.\n",
            ws.branch_name, ws.base_ref
        ),
        BranchFate::KeptAsAsked => format!("Kept branch {}.\n", ws.branch_name),
        BranchFate::KeptCheckedOut(at) => format!(
            "Kept branch {}: it is checked out at {}.\n",
            ws.branch_name,
            at.display()
        ),
        BranchFate::Absent => format!("Branch {} was already gone.\n", ws.branch_name),
    });
    Ok(log)
}

/// What closing the workspace would do and lose, in upstream's shape.
pub async fn readiness(
    store: &Store,
    workspaces: &Workspaces,
    ws: &ExecutionWorkspace,
) -> Result<CloseReadiness, paperclip_store::Error> {
    let mut blocking = Vec::new();
    let mut warnings = Vec::new();
    if ws.closed_at.is_some() {
        blocking.push("The workspace is already closed".to_string());
    }
    if life::task_has_live_run(store, &ws.source_issue_id).await? {
        blocking.push("A run of its task is queued or running".to_string());
    }
    let issue = paperclip_store::issues::get(store, &ws.source_issue_id).await?;
    let terminal = matches!(issue.status.as_str(), "done" | "cancelled");
    if !terminal {
        warnings.push(format!(
            "{} is still open: its next run gets a fresh worktree on {}",
            issue.identifier, ws.branch_name
        ));
    }
    let repo = repository(store, ws).await;
    let read = match &repo {
        None => {
            warnings.push("The repository of the worktree is gone".to_string());
            None
        }
        Some(repo) => {
            let dir = Path::new(&ws.cwd);
            match workspaces
                .close_readiness(repo, dir, &ws.branch_name, &ws.base_ref)
                .await
            {
                Ok(r) => Some(r),
                Err(e) => {
                    warnings.push(format!("Git could not be read: {e}"));
                    None
                }
            }
        }
    };
    let git = read.as_ref().map(|r| {
        let tracked = r.uncommitted_files - r.untracked_files;
        CloseReadinessGit {
            repo_root: repo.as_ref().map(|p| p.display().to_string()),
            workspace_path: Some(ws.cwd.clone()),
            branch_name: Some(ws.branch_name.clone()),
            base_ref: Some(ws.base_ref.clone()),
            has_dirty_tracked_files: tracked > 0,
            has_untracked_files: r.untracked_files > 0,
            dirty_entry_count: tracked as u64,
            untracked_entry_count: r.untracked_files as u64,
            ahead_count: r.branch_exists.then_some(r.commits_ahead as u64),
            behind_count: r.branch_exists.then_some(r.commits_behind as u64),
            is_merged_into_base: r.branch_exists.then_some(r.commits_ahead == 0),
            created_by_runtime: true,
            worktree_present: r.worktree_present,
            branch_exists: r.branch_exists,
        }
    });
    let action =
        |kind: &str, label: &str, description: String, command: Option<String>| PlannedAction {
            kind: kind.into(),
            label: label.into(),
            description,
            command,
        };
    let mut actions = vec![action(
        "archive_record",
        "Archive the workspace",
        "Mark the workspace archived".into(),
        None,
    )];
    let mut delivery = DeliveryState::Unknown;
    if let Some(r) = &read {
        if r.uncommitted_files > 0 {
            warnings.push(format!(
                "{} uncommitted file(s) will be committed on {} before the worktree is removed",
                r.uncommitted_files, ws.branch_name
            ));
            actions.push(action(
                "git_commit_snapshot",
                "Commit uncommitted files",
                format!("Commit the uncommitted files on {}", ws.branch_name),
                Some("git add -A && git commit".into()),
            ));
        }
        if r.worktree_present {
            actions.push(action(
                "git_worktree_remove",
                "Remove the worktree",
                format!("Remove the worktree at {}", ws.cwd),
                Some(format!("git worktree remove --force {}", ws.cwd)),
            ));
        }
        if r.branch_exists && r.commits_ahead > 0 {
            delivery = DeliveryState::Unmerged;
            warnings.push(format!(
                "{} is {} commit(s) ahead of {} and is not merged: the branch is kept",
                ws.branch_name, r.commits_ahead, ws.base_ref
            ));
        } else if r.branch_exists {
            delivery = DeliveryState::MergedByAncestry;
            actions.push(action(
                "git_branch_delete",
                "Delete the merged branch",
                format!("Delete {}: {} has all of it", ws.branch_name, ws.base_ref),
                Some(format!("git branch -D {}", ws.branch_name)),
            ));
        }
    }
    let state = if !blocking.is_empty() {
        CloseState::Blocked
    } else if !warnings.is_empty() {
        CloseState::ReadyWithWarnings
    } else {
        CloseState::Ready
    };
    Ok(CloseReadiness {
        workspace_id: ws.id.clone(),
        delivery_state: delivery,
        state,
        is_destructive_close_allowed: blocking.is_empty(),
        blocking_reasons: blocking,
        warnings,
        linked_issues: vec![CloseLinkedIssue {
            id: issue.id.clone(),
            identifier: Some(issue.identifier.clone()),
            title: issue.title.clone(),
            status: issue.status.as_str().to_string(),
            is_terminal: terminal,
        }],
        planned_actions: actions,
        is_shared_workspace: false,
        is_project_primary_workspace: false,
        git,
        runtime_services: Vec::new(),
    })
}

/// A workspace left `active` by a process that died mid-run is idle: no
/// run of this process is in it.
pub(crate) async fn recover(store: &Store) -> anyhow::Result<()> {
    let n = life::settle_active(store).await?;
    if n > 0 {
        tracing::info!(workspaces = n, "workspaces of interrupted runs marked idle");
    }
    Ok(())
}

///
/// Instances that share a data dir (one volume) share its worktrees: one of
/// them sweeps at a time, the holder of a lease named after the volume
/// (`sweep_lease`); instances with data dirs of their own each sweep theirs.
pub(crate) async fn run(
    store: Store,
    workspaces: Arc<Workspaces>,
    clock: Arc<crate::routines::Clock>,
    sweep_lease: String,
    holder: String,
) {
    loop {
        let hold = SWEEP_INTERVAL * 2;
        match paperclip_store::fleet::singletons::take(&store, &sweep_lease, &holder, hold).await {
            Ok(true) => {
                if let Err(err) = sweep(&store, &workspaces, clock.now()).await {
                    tracing::warn!(error = %err, "workspace retention sweep failed");
                }
            }
            Ok(false) => {}
            Err(err) => tracing::warn!(error = %err, "taking the workspace sweep's lease failed"),
        }
        tokio::time::sleep(SWEEP_INTERVAL).await;
    }
}

/// The name of the worktree sweep's lease for the volume under `data_dir`:
/// an id kept in the data dir, so instances on one shared volume read the
/// same one and instances on volumes of their own read different ones.
pub(crate) fn sweep_lease(data_dir: &std::path::Path) -> anyhow::Result<String> {
    let path = data_dir.join("volume-id");
    let id = match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => id.trim().to_string(),
        _ => {
            let id = uuid::Uuid::new_v4().to_string();
            std::fs::write(&path, format!("{id}\n"))?;
            id
        }
    };
    Ok(format!("worktree-sweep:{id}"))
}

/// One pass at `now`; the number of workspaces closed.
pub(crate) async fn sweep(
    store: &Store,
    workspaces: &Workspaces,
    now: DateTime<Utc>,
) -> anyhow::Result<usize> {
    let mut closed = 0;
    for (company_id, days) in life::companies_with_open(store).await? {
        let Some(cutoff) = now.checked_sub_signed(chrono::Duration::days(days.max(1))) else {
            continue;
        };
        let before = cutoff.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let reason = format!("Its task was closed more than {days} day(s) ago (retention)");
        for ws in life::expired(store, &company_id, &before, BATCH).await? {
            match close(store, workspaces, &Actor::system(), &ws, &reason).await {
                Ok(_) => closed += 1,
                Err(CloseError::Busy | CloseError::Closed) => {}
                Err(CloseError::Failed(why)) => {
                    tracing::warn!(workspace = %ws.id, %why, "removing an expired worktree failed")
                }
                Err(CloseError::Store(e)) => return Err(e.into()),
            }
        }
    }
    if closed > 0 {
        tracing::info!(closed, "worktrees of long-closed tasks removed");
    }
    Ok(closed)
}
