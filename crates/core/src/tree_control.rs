//! Issue-tree control (upstream's tree holds): the board pauses a task and
//! everything under it (no run of theirs starts until the hold is released),
//! or resumes a paused subtree. Here are the words and the rule of which
//! tasks of the subtree a hold takes in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::issue::IssueStatus;

use crate::stored::stored_words as words;

words!(
    TreeMode,
    "tree control mode",
    [
        Pause = "pause",
        Resume = "resume",
        Cancel = "cancel",
        Restore = "restore"
    ]
);
words!(
    HoldStatus,
    "tree hold status",
    [Active = "active", Released = "released"]
);
words!(
    ReleaseStrategy,
    "tree hold release strategy",
    [
        Manual = "manual",
        AfterActiveRunsFinish = "after_active_runs_finish"
    ]
);
words!(
    SkipReason,
    "tree hold skip reason",
    [
        TerminalStatus = "terminal_status",
        AlreadyHeld = "already_held",
        NotHeld = "not_held",
    ]
);

/// Upstream's `releasePolicy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleasePolicy {
    #[serde(default = "manual")]
    pub strategy: ReleaseStrategy,
    #[serde(default)]
    pub note: Option<String>,
}

fn manual() -> ReleaseStrategy {
    ReleaseStrategy::Manual
}

impl Default for ReleasePolicy {
    fn default() -> Self {
        ReleasePolicy {
            strategy: ReleaseStrategy::Manual,
            note: None,
        }
    }
}

/// `POST /issues/{id}/tree-control/preview`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewInput {
    pub mode: TreeMode,
    #[serde(default)]
    pub release_policy: Option<ReleasePolicy>,
}

/// `POST /issues/{id}/tree-holds`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HoldInput {
    pub mode: TreeMode,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub release_policy: Option<ReleasePolicy>,
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// `POST /issues/{id}/tree-holds/{holdId}/release`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseInput {
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub release_policy: Option<ReleasePolicy>,
    #[serde(default)]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// `PUT /issues/{id}/watchdog`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchdogInput {
    pub agent_id: String,
    #[serde(default)]
    pub instructions: Option<String>,
}

words!(
    StalledReviewAction,
    "stalled review action",
    [
        Approve = "approve",
        RequestChanges = "request_changes",
        SendBack = "send_back"
    ]
);

/// `POST /issues/{id}/stalled-review-decision`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StalledReviewInput {
    pub action: StalledReviewAction,
    #[serde(default)]
    pub note: Option<String>,
}

words!(
    RecoveryOutcome,
    "recovery outcome",
    [
        Restored = "restored",
        FalsePositive = "false_positive",
        Blocked = "blocked",
        Cancelled = "cancelled"
    ]
);
words!(
    RecoverySourceStatus,
    "recovery source status",
    [
        Todo = "todo",
        Done = "done",
        InReview = "in_review",
        Blocked = "blocked"
    ]
);

/// `POST /issues/{id}/recovery-actions/resolve`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveRecoveryInput {
    #[serde(default)]
    pub execution_reconciliation: Option<Value>,
    #[serde(default)]
    pub action_id: Option<String>,
    pub outcome: RecoveryOutcome,
    pub source_issue_status: RecoverySourceStatus,
    #[serde(default)]
    pub resolution_note: Option<String>,
}

use crate::limits::{text, Validate, Violation, LONG_TEXT_MAX_CHARS};

fn opt_text(field: &str, value: &Option<String>, max: usize) -> Result<(), Violation> {
    value.as_deref().map_or(Ok(()), |v| text(field, v, max))
}

impl Validate for PreviewInput {
    fn validate(&self) -> Result<(), Violation> {
        opt_text(
            "releasePolicy.note",
            &self.release_policy.as_ref().and_then(|p| p.note.clone()),
            500,
        )
    }
}
impl Validate for HoldInput {
    fn validate(&self) -> Result<(), Violation> {
        opt_text("reason", &self.reason, 1000)
    }
}
impl Validate for ReleaseInput {
    fn validate(&self) -> Result<(), Violation> {
        opt_text("reason", &self.reason, 1000)
    }
}
impl Validate for WatchdogInput {
    fn validate(&self) -> Result<(), Violation> {
        text("agentId", &self.agent_id, 64)?;
        opt_text("instructions", &self.instructions, LONG_TEXT_MAX_CHARS)
    }
}
impl Validate for StalledReviewInput {
    fn validate(&self) -> Result<(), Violation> {
        opt_text("note", &self.note, LONG_TEXT_MAX_CHARS)
    }
}
impl Validate for ResolveRecoveryInput {
    fn validate(&self) -> Result<(), Violation> {
        opt_text("resolutionNote", &self.resolution_note, LONG_TEXT_MAX_CHARS)
    }
}

/// A reason or note: trimmed, 1 to `max` characters (upstream's bounds).
pub fn check_text(text: &Option<String>, max: usize) -> Result<Option<String>, String> {
    match text.as_deref().map(str::trim) {
        None => Ok(None),
        Some(t) if t.is_empty() || t.chars().count() > max => {
            Err(format!("Must be 1 to {max} characters"))
        }
        Some(t) => Ok(Some(t.to_string())),
    }
}

/// Whether a hold of `mode` leaves this task out, and why: closed work is
/// never held, a task already under a pause is not paused twice, and a
/// resume only touches paused tasks.
pub fn skip_reason(mode: TreeMode, status: IssueStatus, paused: bool) -> Option<SkipReason> {
    if status.is_terminal() {
        return Some(SkipReason::TerminalStatus);
    }
    match mode {
        TreeMode::Pause if paused => Some(SkipReason::AlreadyHeld),
        TreeMode::Resume if !paused => Some(SkipReason::NotHeld),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_skips_closed_work_and_double_pauses() {
        use IssueStatus::*;
        assert_eq!(
            skip_reason(TreeMode::Pause, Done, false),
            Some(SkipReason::TerminalStatus)
        );
        assert_eq!(
            skip_reason(TreeMode::Pause, Todo, true),
            Some(SkipReason::AlreadyHeld)
        );
        assert_eq!(skip_reason(TreeMode::Pause, InProgress, false), None);
        assert_eq!(
            skip_reason(TreeMode::Resume, Todo, false),
            Some(SkipReason::NotHeld)
        );
        assert_eq!(skip_reason(TreeMode::Resume, Todo, true), None);
    }

    #[test]
    fn bodies_are_strict() {
        assert!(serde_json::from_str::<HoldInput>(r#"{"mode":"freeze"}"#).is_err());
        assert!(serde_json::from_str::<HoldInput>(r#"{"mode":"pause","extra":1}"#).is_err());
        let hold: HoldInput =
            serde_json::from_str(r#"{"mode":"pause","releasePolicy":{}}"#).unwrap();
        assert_eq!(
            hold.release_policy.unwrap().strategy,
            ReleaseStrategy::Manual
        );
        assert_eq!(
            check_text(&Some("  ".into()), 10),
            Err("Must be 1 to 10 characters".into())
        );
        assert_eq!(check_text(&Some(" ok ".into()), 10), Ok(Some("ok".into())));
    }
}
