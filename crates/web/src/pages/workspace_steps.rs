//! A run's workspace steps on its page (upstream's workspace operations):
//! making or reusing the task's worktree, its setup, the snapshot commit,
//! each with how it went and its log, collapsed.

use maud::{html, Markup};
use paperclip_core::workspace_ops::{WorkspaceOperation, WorkspaceOperationPhase};

use crate::fmt::pill;

fn words(phase: WorkspaceOperationPhase) -> &'static str {
    match phase {
        WorkspaceOperationPhase::WorktreePrepare => "Prepare the task's worktree",
        WorkspaceOperationPhase::WorkspaceProvision => "Run the project's setup command",
        WorkspaceOperationPhase::WorkspaceRepair => "Repair the worktree",
        WorkspaceOperationPhase::WorkspaceFinalize => "Commit the run's work on the task branch",
        WorkspaceOperationPhase::WorktreeCleanup => "Remove the worktree",
    }
}

/// Nothing when the run had no workspace.
pub fn section(ops: &[(WorkspaceOperation, String)]) -> Markup {
    html! {
        @if !ops.is_empty() {
            section.run-workspace {
                h2 { "Workspace" }
                ol.steps {
                    @for (op, log) in ops {
                        li.workspace-step data-phase=(op.phase.as_str()) data-status=(op.status.as_str()) {
                            strong { (words(op.phase)) } " " (pill(op.status.as_str()))
                            @if let Some(code) = op.exit_code { span.muted { " exit " (code) } }
                            @if let Some(command) = &op.command { " " code { (command) } }
                            @if !log.trim().is_empty() {
                                details data-details-scope={"ws-op-" (op.id)} {
                                    summary { "Log" }
                                    pre.log { (log) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
