//! A run's execution workspace: a task of a project that declares a git
//! repository runs in its own worktree of it, on its own branch, made (or
//! reused) here before the adapter starts; after the run, what changed
//! there since the run started is recorded. A task without such a project
//! runs exactly as before: nothing here touches it.

use std::path::PathBuf;

use paperclip_adapters::Invocation;
use paperclip_core::model::{HeartbeatRun, Issue};
use paperclip_core::workspace::{
    ChangedFile, ExecutionWorkspace, FileChangeKind, WorkspaceSourceType,
};
use paperclip_store::runs::workspaces::{self as store_ws, NewExecutionWorkspace};
use serde_json::json;

use super::prepare::RunPlan;
use super::workspace_ops as ops;
use super::RunDeps;
use crate::workspace::{branch_name, ChangeKind, DEFAULT_BRANCH_TEMPLATE};

/// The most of a run's patch that is stored: enough to review a task's
/// change, bounded so one run that rewrote a tree cannot fill the database.
pub(crate) const MAX_PATCH_BYTES: usize = 256 * 1024;

/// Adapters that take a working directory in their config's `cwd` (the
/// worktree replaces the agent's own: isolation is not the agent's choice):
/// the ones on this machine, and the Kubernetes Jobs, which reach the
/// worktree on the shared volume at the same path (their adapter refuses
/// the run, saying what to change, when the worktree is not on it).
const WORKTREE_ADAPTERS: [&str; 7] = [
    "process",
    "claude_local",
    "codex_local",
    "opencode_local",
    "gemini_local",
    "claude_k8s",
    "opencode_k8s",
];

/// The worktree a run works in.
pub(crate) struct Bound {
    pub workspace: ExecutionWorkspace,
    pub dir: PathBuf,
    /// What the run's changes are measured against.
    pub start_commit: String,
    /// The task's identifier (ACM-12), for commit messages people read.
    pub identifier: String,
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
    // An HTTP agent works wherever it is: no directory of ours to give it.
    if !WORKTREE_ADAPTERS.contains(&adapter_type) {
        return Ok(None);
    }
    let Some(issue) = issue else { return Ok(None) };
    let Some(project_id) = &issue.project_id else {
        return Ok(None);
    };
    let store = deps.store;
    let project = paperclip_store::org::projects::get(store, project_id)
        .await
        .map_err(|e| format!("could not read the task's project: {e}"))?;
    // The board turned isolation off for the project: its agents work
    // where their own config says, as before workspaces.
    let policy = project.execution_workspace_policy.as_ref();
    if !paperclip_core::workspace_ops::ExecutionWorkspacePolicy::isolates(policy) {
        return Ok(None);
    }
    let declared = paperclip_store::org::workspaces::primary(store, project_id)
        .await
        .map_err(|e| format!("could not read the project's workspace: {e}"))?;
    let Some(declared) = declared else {
        return Ok(None);
    };
    let cloned = declared.source_type == WorkspaceSourceType::GitRepo;
    let Some(repo) = declared
        .cwd
        .as_deref()
        .filter(|_| cloned || declared.source_type == WorkspaceSourceType::LocalPath)
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
            within_disk_budget(deps, &run.company_id).await?;
            let branch = branch_name(DEFAULT_BRANCH_TEMPLATE, &issue.identifier, &issue.title);
            let dir = deps
                .dirs
                .worktrees
                .join(&run.company_id)
                .join(&issue.identifier);
            if cloned {
                // A new task starts from the remote's latest.
                deps.workspaces.fetch_origin(&repo).await.map_err(|e| {
                    format!(
                        "could not fetch {}: {e}",
                        declared.repo_url.as_deref().unwrap_or("origin")
                    )
                })?;
            }
            (branch, dir, base_ref(&repo, &declared, cloned).await)
        }
    };
    let started_at = paperclip_store::now();
    let ensured = deps
        .workspaces
        .ensure_worktree(&repo, &base_ref, &branch, &dir)
        .await;
    if let (Err(e), Some(ws)) = (&ensured, &existing) {
        let log = format!("{e}\n");
        let failed = ops::Step::failed(PREPARE, &started_at, &repo, log);
        ops::record(deps, run, ws, failed).await;
    }
    let worktree = ensured.map_err(|e| {
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
    ops::record(
        deps,
        run,
        &workspace,
        ops::prepared(&worktree, &repo, &base_ref, &started_at),
    )
    .await;
    if let Some(command) = declared.setup_command.as_deref() {
        let identifier = &issue.identifier;
        super::workspace_setup::provision(deps, run, &workspace, &worktree, command, identifier)
            .await?;
    }
    Ok(Some(Bound {
        workspace,
        dir: worktree.dir,
        start_commit: worktree.head,
        identifier: issue.identifier.clone(),
    }))
}

const PREPARE: paperclip_core::workspace_ops::WorkspaceOperationPhase =
    paperclip_core::workspace_ops::WorkspaceOperationPhase::WorktreePrepare;

/// A task's first run makes a worktree: refused once the company's open
/// worktrees use their disk budget, so forgotten ones cannot fill a disk.
async fn within_disk_budget(deps: &RunDeps<'_>, company_id: &str) -> Result<(), String> {
    use paperclip_store::runs::workspace_life as life;
    let usage = life::usage(deps.store, company_id)
        .await
        .map_err(|e| format!("could not read the company's workspace usage: {e}"))?;
    let (_, budget) = life::bounds(deps.store, company_id)
        .await
        .map_err(|e| format!("could not read the company's workspace budget: {e}"))?;
    if usage.disk_bytes < budget {
        return Ok(());
    }
    Err(format!(
        "the company's open worktrees use {} of their {} disk budget, so no new one is made. \
         Close the workspaces of finished tasks (or let the retention sweep remove them), \
         or raise the budget (workspaceDiskBudgetMb) in the company's settings",
        ops::human_bytes(usage.disk_bytes),
        ops::human_bytes(budget)
    ))
}

/// The base of a new task branch: the declared `defaultRef`, else
/// `repoRef`, else the branch checked out in the repository, else its HEAD.
/// For a clone, the remote's branch (`origin/<branch>`), which a fetch
/// moves; a local branch would stay where the clone left it.
async fn base_ref(
    repo: &std::path::Path,
    declared: &paperclip_core::workspace::ProjectWorkspace,
    cloned: bool,
) -> String {
    let branch = match declared.default_ref.clone().or(declared.repo_ref.clone()) {
        Some(r) => Some(r),
        None => crate::workspace::current_branch(repo).await.ok().flatten(),
    };
    match (branch, cloned) {
        (Some(b), true) if !b.starts_with("origin/") => format!("origin/{b}"),
        (Some(b), _) => b,
        (None, _) => "HEAD".to_string(),
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

pub(crate) fn changed_file(file: crate::workspace::FileChange) -> ChangedFile {
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
