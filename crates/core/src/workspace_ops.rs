//! An execution workspace's life after it is made: the operations done on
//! it (upstream's `workspace_operations`, in its field names), what its task
//! changed against the base branch, whether it can be closed, and the
//! company-wide bounds (retention of closed tasks' worktrees, disk budget).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::limits::{text, Validate, Violation};
use crate::stored::Stored;
use crate::work_product::wp_enum as ws_enum;
use crate::workspace::{ChangedFile, ExecutionWorkspace, ExecutionWorkspaceStatus};

ws_enum! {
    /// Upstream's `executionWorkspacePolicy.defaultMode`, the two served.
    PolicyMode, "execution workspace policy mode" {
        IsolatedWorkspace = "isolated_workspace",
        SharedWorkspace = "shared_workspace",
    }
}

/// A project's `executionWorkspacePolicy` (upstream's name), the keys
/// served: tasks of a project with a git workspace run in their own
/// worktrees unless the board turns that off here (`enabled: false`, or
/// `defaultMode: "shared_workspace"`). Other keys of upstream's are refused,
/// never dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExecutionWorkspacePolicy {
    #[serde(default = "enabled")]
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<PolicyMode>,
}

fn enabled() -> bool {
    true
}

impl ExecutionWorkspacePolicy {
    /// Whether a task of the project gets its own worktree.
    pub fn isolates(policy: Option<&ExecutionWorkspacePolicy>) -> bool {
        policy.is_none_or(|p| p.enabled && p.default_mode != Some(PolicyMode::SharedWorkspace))
    }
}

/// How long a closed task's worktree is kept before the sweep removes it,
/// when the company sets nothing. Upstream's reaper cooldown is 7 days too.
pub const DEFAULT_RETENTION_DAYS: i64 = 7;
/// The disk a company's open worktrees may use, when it sets nothing: a
/// bound, so forgotten worktrees cannot fill a disk.
pub const DEFAULT_DISK_BUDGET_MB: i64 = 10 * 1024;
pub const RETENTION_DAYS_MAX: u64 = 3650;
/// A petabyte: a budget beyond it is a typo.
pub const DISK_BUDGET_MB_MAX: u64 = 1 << 30;

ws_enum! {
    WorkspaceOperationPhase, "workspace operation phase" {
        WorktreePrepare = "worktree_prepare",
        WorkspaceProvision = "workspace_provision",
        WorkspaceRepair = "workspace_repair",
        WorkspaceFinalize = "workspace_finalize",
        WorktreeCleanup = "worktree_cleanup",
    }
}

ws_enum! {
    WorkspaceOperationStatus, "workspace operation status" {
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Skipped = "skipped",
    }
}

ws_enum! {
    /// Upstream's close-readiness `state`.
    CloseState, "close readiness state" {
        Ready = "ready",
        ReadyWithWarnings = "ready_with_warnings",
        Blocked = "blocked",
    }
}

/// One step done on a workspace: a git command, a setup command, a
/// snapshot commit, a removal. Its log is stored with it (`logStore` is
/// `"db"`), bounded.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceOperation {
    pub id: String,
    pub company_id: String,
    pub execution_workspace_id: String,
    pub heartbeat_run_id: Option<String>,
    pub issue_id: Option<String>,
    pub phase: WorkspaceOperationPhase,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub status: WorkspaceOperationStatus,
    pub exit_code: Option<i64>,
    pub log_store: String,
    pub log_ref: String,
    pub log_bytes: i64,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `GET /api/workspace-operations/{id}/log`, in upstream's shape.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceOperationLog {
    pub operation_id: String,
    pub store: String,
    pub log_ref: String,
    pub content: String,
    /// Where the next read starts; null at the end.
    pub next_offset: Option<u64>,
}

/// A commit on the task's branch that its base does not have.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceCommit {
    pub sha: String,
    pub subject: String,
    pub author_name: String,
    pub committed_at: String,
}

/// What the task changed on its branch against the base it forked from,
/// as of its last run's end. Ours: upstream records no diff.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskWorkspaceChanges {
    pub execution_workspace_id: String,
    pub issue_id: String,
    pub base_commit: String,
    pub head_commit: String,
    pub files_changed: u64,
    pub insertions: u64,
    pub deletions: u64,
    pub files: Vec<ChangedFile>,
    pub patch: String,
    pub truncated: bool,
    /// Newest first, bounded.
    pub commits: Vec<WorkspaceCommit>,
    pub updated_at: String,
}

/// "changed 3 files, +120 −8", or "no changes": what a run or a task did
/// to its code, in the words a person reads first.
pub fn change_summary(files: u64, insertions: u64, deletions: u64) -> String {
    if files == 0 {
        return "no changes".to_string();
    }
    let noun = if files == 1 { "file" } else { "files" };
    format!("changed {files} {noun}, +{insertions} \u{2212}{deletions}")
}

/// 1.2 GB, 340 MB, 12 kB: sizes as a person reads them.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

ws_enum! {
    /// Upstream's `deliveryState`: whether the base has the branch's work
    /// (we know ancestry, not pull requests).
    DeliveryState, "delivery state" {
        MergedByAncestry = "merged_by_ancestry",
        Unmerged = "unmerged",
        Unknown = "unknown",
    }
}

/// Git's view of a workspace for close-readiness, in upstream's fields
/// (`worktreePresent` and `branchExists` are ours).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseReadinessGit {
    pub repo_root: Option<String>,
    pub workspace_path: Option<String>,
    pub branch_name: Option<String>,
    pub base_ref: Option<String>,
    pub has_dirty_tracked_files: bool,
    pub has_untracked_files: bool,
    /// Tracked files changed, staged or deleted.
    pub dirty_entry_count: u64,
    pub untracked_entry_count: u64,
    pub ahead_count: Option<u64>,
    pub behind_count: Option<u64>,
    pub is_merged_into_base: Option<bool>,
    pub created_by_runtime: bool,
    pub worktree_present: bool,
    pub branch_exists: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedAction {
    pub kind: String,
    pub label: String,
    pub description: String,
    pub command: Option<String>,
}

/// The task a workspace belongs to.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseLinkedIssue {
    pub id: String,
    pub identifier: Option<String>,
    pub title: String,
    pub status: String,
    pub is_terminal: bool,
}

/// `GET /api/execution-workspaces/{id}/close-readiness`, in upstream's
/// shape. `runtimeServices` is always empty: none are run here.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloseReadiness {
    pub workspace_id: String,
    pub delivery_state: DeliveryState,
    pub state: CloseState,
    pub blocking_reasons: Vec<String>,
    pub warnings: Vec<String>,
    pub linked_issues: Vec<CloseLinkedIssue>,
    pub planned_actions: Vec<PlannedAction>,
    /// Closing never destroys work here (what is uncommitted is committed
    /// first); false only while it is blocked.
    pub is_destructive_close_allowed: bool,
    pub is_shared_workspace: bool,
    pub is_project_primary_workspace: bool,
    pub git: Option<CloseReadinessGit>,
    #[schema(value_type = Vec<Object>)]
    pub runtime_services: Vec<Value>,
}

/// `PATCH /api/execution-workspaces/{id}`: the fields served. `status:
/// "archived"` closes the workspace (removes its worktree).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionWorkspacePatch {
    pub name: Option<String>,
    pub status: Option<ExecutionWorkspaceStatus>,
    pub cleanup_reason: Option<String>,
}

impl Validate for ExecutionWorkspacePatch {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(name) = &self.name {
            text("name", name, crate::limits::NAME_MAX_CHARS)?;
        }
        if let Some(reason) = &self.cleanup_reason {
            text("cleanupReason", reason, 2000)?;
        }
        Ok(())
    }
}

/// `GET /api/companies/{id}/workspace-overview`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceOverview {
    pub company_id: String,
    pub open_count: u64,
    pub active_count: u64,
    /// Measured at each run's end (a worktree's files, not the shared git
    /// objects).
    pub disk_bytes: u64,
    pub disk_budget_bytes: u64,
    pub retention_days: i64,
    pub workspaces: Vec<ExecutionWorkspace>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_say_what_changed() {
        assert_eq!(change_summary(0, 0, 0), "no changes");
        assert_eq!(change_summary(1, 2, 0), "changed 1 file, +2 \u{2212}0");
        assert_eq!(change_summary(3, 120, 8), "changed 3 files, +120 \u{2212}8");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(12_300), "12.3 kB");
        assert_eq!(human_bytes(10 * 1024 * 1024 * 1024), "10.7 GB");
    }

    #[test]
    fn every_phase_round_trips() {
        for phase in WorkspaceOperationPhase::ALL {
            let json = serde_json::to_value(phase).unwrap();
            assert_eq!(json, Value::String(phase.as_str().into()));
        }
    }
}
