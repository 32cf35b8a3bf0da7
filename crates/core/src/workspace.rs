//! Project workspaces (where a project's code lives) and execution
//! workspaces (the git worktree a task runs in), in upstream's field names.
//! Fields upstream has and we do not support yet are left out, never
//! renamed. What a run changed is ours (`RunWorkspaceChanges`): upstream has
//! no per-run diff.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::input::double_option;
use crate::limits::{text, Validate, Violation};
use crate::stored::Stored;

use crate::work_product::wp_enum as ws_enum;

ws_enum! {
    /// Where a project workspace's code comes from: `local_path` (an
    /// existing local git repository) or `git_repo` (a URL, cloned into the
    /// data dir) are served; the others are upstream's and refused with a
    /// reason rather than misread.
    WorkspaceSourceType, "workspace source type" {
        LocalPath = "local_path",
        GitRepo = "git_repo",
        RemoteManaged = "remote_managed",
        NonGitPath = "non_git_path",
    }
}

ws_enum! {
    ExecutionWorkspaceStatus, "execution workspace status" {
        Active = "active",
        Idle = "idle",
        InReview = "in_review",
        Archived = "archived",
        CleanupFailed = "cleanup_failed",
    }
}

ws_enum! {
    /// Upstream's `mode`: every workspace this server makes is isolated.
    ExecutionWorkspaceMode, "execution workspace mode" {
        IsolatedWorkspace = "isolated_workspace",
    }
}

ws_enum! {
    /// Upstream's `strategyType` and `providerType` (one vocabulary here:
    /// the only strategy served is a git worktree, provided as one).
    WorkspaceStrategyType, "workspace strategy type" {
        GitWorktree = "git_worktree",
    }
}

ws_enum! {
    /// How a file changed, as git names it.
    FileChangeKind, "file change kind" {
        Added = "added",
        Modified = "modified",
        Deleted = "deleted",
        Renamed = "renamed",
        Copied = "copied",
        TypeChanged = "type_changed",
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectWorkspace {
    pub id: String,
    pub company_id: String,
    pub project_id: String,
    pub name: String,
    pub source_type: WorkspaceSourceType,
    /// The local repository: the declared one, or the clone of `repoUrl`
    /// in the data dir.
    pub cwd: Option<String>,
    /// For `git_repo`: where it was cloned from (credentials cut out).
    pub repo_url: Option<String>,
    pub repo_ref: Option<String>,
    pub default_ref: Option<String>,
    pub is_primary: bool,
    /// Run (`sh -c`, in the worktree) when a task's worktree is made; a
    /// failure fails the run that needed it.
    pub setup_command: Option<String>,
    /// Run in the worktree before it is removed; a failure is recorded and
    /// the removal goes on.
    pub cleanup_command: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewProjectWorkspace {
    pub name: Option<String>,
    pub source_type: Option<WorkspaceSourceType>,
    pub cwd: Option<String>,
    /// Accepted so upstream's clients can send it; refused when set (no
    /// cloning yet).
    pub repo_url: Option<String>,
    pub repo_ref: Option<String>,
    pub default_ref: Option<String>,
    pub is_primary: Option<bool>,
    pub setup_command: Option<String>,
    pub cleanup_command: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectWorkspacePatch {
    pub name: Option<String>,
    pub cwd: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub repo_ref: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub default_ref: Option<Option<String>>,
    pub is_primary: Option<bool>,
    /// Upstream's, accepted so its clients can send them; refused unless
    /// they leave the workspace a local repository, so no change is
    /// silently dropped.
    pub source_type: Option<WorkspaceSourceType>,
    pub repo_url: Option<String>,
    /// null clears.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub setup_command: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub cleanup_command: Option<Option<String>>,
}

/// Paths and refs are short: a path longer than this is not a repository
/// anyone typed.
const PATH: usize = 4096;
const REF: usize = 255;
const NAME: usize = crate::limits::NAME_MAX_CHARS;

fn opt(field: &str, value: Option<&String>, max: usize) -> Result<(), Violation> {
    value.map_or(Ok(()), |v| text(field, v, max))
}

impl Validate for NewProjectWorkspace {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt("cwd", self.cwd.as_ref(), PATH)?;
        opt("repoUrl", self.repo_url.as_ref(), PATH)?;
        opt("repoRef", self.repo_ref.as_ref(), REF)?;
        opt("defaultRef", self.default_ref.as_ref(), REF)?;
        opt("setupCommand", self.setup_command.as_ref(), PATH)?;
        opt("cleanupCommand", self.cleanup_command.as_ref(), PATH)
    }
}

impl Validate for ProjectWorkspacePatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt("cwd", self.cwd.as_ref(), PATH)?;
        opt(
            "repoRef",
            self.repo_ref.as_ref().and_then(Option::as_ref),
            REF,
        )?;
        opt(
            "defaultRef",
            self.default_ref.as_ref().and_then(Option::as_ref),
            REF,
        )?;
        opt("repoUrl", self.repo_url.as_ref(), PATH)?;
        opt(
            "setupCommand",
            self.setup_command.as_ref().and_then(Option::as_ref),
            PATH,
        )?;
        opt(
            "cleanupCommand",
            self.cleanup_command.as_ref().and_then(Option::as_ref),
            PATH,
        )
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionWorkspace {
    pub id: String,
    pub company_id: String,
    pub project_id: String,
    pub project_workspace_id: String,
    pub source_issue_id: String,
    pub mode: ExecutionWorkspaceMode,
    pub strategy_type: WorkspaceStrategyType,
    pub name: String,
    pub status: ExecutionWorkspaceStatus,
    /// The worktree's directory.
    pub cwd: String,
    pub base_ref: String,
    pub branch_name: String,
    pub provider_type: WorkspaceStrategyType,
    /// Upstream's worktree path (the same as `cwd` here).
    pub provider_ref: String,
    pub last_used_at: String,
    pub opened_at: String,
    pub closed_at: Option<String>,
    /// `{ "baseCommit": <the commit the worktree was made from>,
    /// "createdByRuntime": true }`.
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub created_at: String,
    pub updated_at: String,
}

/// What one run changed in its execution workspace, against the commit the
/// worktree was at when the run started (uncommitted and untracked files
/// included). Ours: upstream records no per-run diff.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunWorkspaceChanges {
    pub run_id: String,
    pub execution_workspace_id: String,
    pub issue_id: String,
    pub from_commit: String,
    pub files_changed: u64,
    pub insertions: u64,
    pub deletions: u64,
    pub files: Vec<ChangedFile>,
    /// The unified diff, bounded; `truncated` says whether it was cut.
    pub patch: String,
    pub truncated: bool,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    pub path: String,
    pub old_path: Option<String>,
    pub kind: FileChangeKind,
    /// Absent for a binary file.
    pub insertions: Option<u64>,
    pub deletions: Option<u64>,
}
