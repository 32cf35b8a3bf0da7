//! A run's execution workspace: a task of a project that declares a git
//! repository runs in its own worktree of it, on its own branch, made (or
//! reused) here before the adapter starts; after the run, what changed
//! there since the run started is recorded. A task without such a project
//! runs exactly as before: nothing here touches it.

use std::path::PathBuf;

use paperclip_adapters::Invocation;
use paperclip_core::model::{HeartbeatRun, Issue};
use paperclip_core::workspace::{
    ChangedFile, ExecutionWorkspace, FileChangeKind, RunWorkspaceChanges, WorkspaceSourceType,
};
use paperclip_store::runs::workspaces::{self as store_ws, NewExecutionWorkspace};
use serde_json::json;

use super::prepare::RunPlan;
use super::RunDeps;
use crate::workspace::{branch_name, ChangeKind, DEFAULT_BRANCH_TEMPLATE};

/// The most of a run's patch that is stored: enough to review a task's
/// change, bounded so one run that rewrote a tree cannot fill the database.
pub(crate) const MAX_PATCH_BYTES: usize = 256 * 1024;

/// Adapters that run on this machine and take a working directory in their
/// config's `cwd` (the worktree replaces the agent's own: isolation is not
/// the agent's choice).
const LOCAL_ADAPTERS: [&str; 4] = ["process", "claude_local", "codex_local", "opencode_local"];

/// The worktree a run works in.
pub(crate) struct Bound {
    pub workspace: ExecutionWorkspace,
    pub dir: PathBuf,
    /// What the run's changes are measured against.
    pub start_commit: String,
}

/// Makes or reuses the task's worktree when its project declares a git
/// repository. `Err` is why the run cannot start in it (git failed, the
/// repository is gone): the run fails with that reason rather than run in
/// a shared checkout.
pub(crate) async fn bind(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    adapter_type: &str,
    issue: Option<&Issue>,
) -> Result<Option<Bound>, String> {
    // Only adapters that run on this machine can work in a worktree here;
    // a remote one (HTTP, a Kubernetes Job) runs as before for now.
    if !LOCAL_ADAPTERS.contains(&adapter_type) {
        return Ok(None);
    }
    let Some(issue) = issue else { return Ok(None) };
    let Some(project_id) = &issue.project_id else {
        return Ok(None);
    };
    let store = deps.store;
    let declared = paperclip_store::org::workspaces::primary(store, project_id)
        .await
        .map_err(|e| format!("could not read the project's workspace: {e}"))?;
    let Some(declared) = declared else {
        return Ok(None);
    };
    let Some(repo) = declared
        .cwd
        .as_deref()
        .filter(|_| declared.source_type == WorkspaceSourceType::LocalPath)
    else {
        return Ok(None);
    };
    let repo = PathBuf::from(repo);
    let existing = store_ws::open_for_issue(store, &issue.id)
        .await
        .map_err(|e| format!("could not read the task's workspace: {e}"))?;
    let (branch, dir, base_ref) = match &existing {
        Some(ws) => (
            ws.branch_name.clone(),
            PathBuf::from(&ws.cwd),
            ws.base_ref.clone(),
        ),
        None => {
            let branch = branch_name(DEFAULT_BRANCH_TEMPLATE, &issue.identifier, &issue.title);
            let dir = deps
                .dirs
                .worktrees
                .join(&run.company_id)
                .join(&issue.identifier);
            (branch, dir, base_ref(&repo, &declared).await)
        }
    };
    let worktree = deps
        .workspaces
        .ensure_worktree(&repo, &base_ref, &branch, &dir)
        .await
        .map_err(|e| {
            format!(
                "could not prepare the task's worktree of {}: {e}",
                repo.display()
            )
        })?;
    let workspace = match existing {
        Some(ws) => {
            store_ws::touch(store, &ws.id)
                .await
                .map_err(|e| format!("could not record the task's workspace: {e}"))?;
            ws
        }
        None => {
            let cwd = worktree.dir.display().to_string();
            let new = NewExecutionWorkspace {
                company_id: &run.company_id,
                project_id,
                project_workspace_id: &declared.id,
                issue_id: &issue.id,
                name: &branch,
                cwd: &cwd,
                base_ref: &base_ref,
                branch_name: &worktree.branch,
                base_commit: &worktree.head,
            };
            store_ws::open(store, &new)
                .await
                .map_err(|e| format!("could not record the task's workspace: {e}"))?
        }
    };
    Ok(Some(Bound {
        workspace,
        dir: worktree.dir,
        start_commit: worktree.head,
    }))
}

/// The base of a new task branch: the declared `defaultRef`, else
/// `repoRef`, else the branch checked out in the repository, else its HEAD.
async fn base_ref(
    repo: &std::path::Path,
    declared: &paperclip_core::workspace::ProjectWorkspace,
) -> String {
    if let Some(r) = declared.default_ref.clone().or(declared.repo_ref.clone()) {
        return r;
    }
    match crate::workspace::current_branch(repo).await {
        Ok(Some(branch)) => branch,
        _ => "HEAD".to_string(),
    }
}

/// Points the run at its worktree: env, the working directory (over the
/// agent's own `cwd`), and upstream's `context.paperclipWorkspace`.
pub(crate) fn apply(bound: &Bound, plan: &mut RunPlan) {
    let dir = bound.dir.display().to_string();
    let ws = &bound.workspace;
    plan.env
        .insert("PAPERCLIP_WORKSPACE_CWD".into(), dir.clone());
    plan.env
        .insert("PAPERCLIP_WORKSPACE_BRANCH".into(), ws.branch_name.clone());
    plan.env
        .insert("PAPERCLIP_WORKSPACE_WORKTREE_PATH".into(), dir.clone());
    plan.env
        .insert("PAPERCLIP_EXECUTION_WORKSPACE_ID".into(), ws.id.clone());
    if let Some(config) = plan.config.as_object_mut() {
        config.insert("cwd".into(), json!(dir));
    }
}

pub(crate) fn apply_to_invocation(bound: &Bound, invocation: &mut Invocation) {
    invocation.default_cwd = bound.dir.clone();
    let ws = &bound.workspace;
    let described = json!({
        "cwd": bound.dir.display().to_string(), "source": "project_primary",
        "mode": ws.mode, "strategy": ws.strategy_type, "branchName": ws.branch_name,
        "worktreePath": bound.dir.display().to_string(), "executionWorkspaceId": ws.id,
    });
    if let Some(context) = invocation.context.as_object_mut() {
        context.insert("paperclipWorkspace".into(), described);
    } else if invocation.context.is_null() {
        invocation.context = json!({ "paperclipWorkspace": described });
    }
}

/// Records what the run changed in its worktree. A failure here is logged,
/// never the run's: the work is on disk whatever the record says.
pub(crate) async fn record(deps: &RunDeps<'_>, run: &HeartbeatRun, bound: &Bound) {
    let ws = &bound.workspace;
    let diff = deps
        .workspaces
        .diff(&bound.dir, &bound.start_commit, MAX_PATCH_BYTES)
        .await;
    let diff = match diff {
        Ok(diff) => diff,
        Err(err) => {
            tracing::warn!(run = %run.id, error = %err, "reading the run's changes failed");
            return;
        }
    };
    let changes = RunWorkspaceChanges {
        run_id: run.id.clone(),
        execution_workspace_id: ws.id.clone(),
        issue_id: ws.source_issue_id.clone(),
        from_commit: diff.from_commit,
        files_changed: diff.files.len() as u64,
        insertions: diff.insertions,
        deletions: diff.deletions,
        files: diff.files.into_iter().map(changed_file).collect(),
        patch: diff.patch,
        truncated: diff.truncated,
        created_at: paperclip_store::now(),
    };
    if let Err(err) = store_ws::record_changes(deps.store, &run.company_id, &changes).await {
        tracing::warn!(run = %run.id, error = %err, "recording the run's changes failed");
    }
    if let Err(err) = store_ws::idle(deps.store, &ws.id).await {
        tracing::warn!(run = %run.id, error = %err, "marking the workspace idle failed");
    }
}

fn changed_file(file: crate::workspace::FileChange) -> ChangedFile {
    ChangedFile {
        path: file.path,
        old_path: file.old_path,
        kind: match file.kind {
            ChangeKind::Added => FileChangeKind::Added,
            ChangeKind::Modified => FileChangeKind::Modified,
            ChangeKind::Deleted => FileChangeKind::Deleted,
            ChangeKind::Renamed => FileChangeKind::Renamed,
            ChangeKind::Copied => FileChangeKind::Copied,
            ChangeKind::TypeChanged => FileChangeKind::TypeChanged,
        },
        insertions: file.insertions,
        deletions: file.deletions,
    }
}
