//! The task page's supervision notes: an active pause over the task's tree
//! (with a Release button) and its scheduled monitor, in words.

use maud::{html, Markup};
use paperclip_core::model::Issue;
use paperclip_store::Store;
use serde_json::Value;

/// The pause over the task (its own or an ancestor's): one statement.
pub async fn load(store: &Store, issue: &Issue) -> paperclip_store::Result<Option<Value>> {
    paperclip_store::issues::tree_holds::active_pause_gate(store, issue).await
}

pub fn section(issue: &Issue, hold: Option<&Value>) -> Markup {
    let max = issue
        .execution_policy
        .as_ref()
        .and_then(|p| p["monitor"]["maxAttempts"].as_i64());
    html! {
        @if let Some(hold) = hold {
            @let root = hold["rootIssueId"].as_str().unwrap_or_default();
            div.run-error.tree-hold data-tree-hold=(hold["holdId"].as_str().unwrap_or_default()) {
                p { strong { "Paused: " }
                    @if hold["isRoot"] == true { "this task and everything under it are on hold" }
                    @else { "a task above this one put its whole tree on hold" }
                    "; no run of theirs starts until the hold is released."
                    @if let Some(reason) = hold["reason"].as_str() { " Reason: " (reason) } }
                button.small type="button" data-action="POST"
                    data-url={"/api/issues/" (root) "/tree-holds/" (hold["holdId"].as_str().unwrap_or_default()) "/release"}
                    data-body="{}" data-done="Released" { "Release" }
            }
        }
        @if let Some(next) = issue.monitor_next_check_at.as_deref() {
            p.muted.task-monitor data-monitor-next=(next) {
                strong { "Monitor: " }
                (paperclip_core::monitor::describe(next, issue.monitor_attempt_count, max))
                @if let Some(notes) = issue.monitor_notes.as_deref() { " · " (notes) }
            }
        }
    }
}
