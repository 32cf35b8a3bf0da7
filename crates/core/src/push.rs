//! Web Push vocabulary: what may be pushed to a person's devices, what they
//! chose to hear about, and what a notification's action link may do. The
//! sending (encryption, VAPID, delivery) is the server's; these are the words.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What waits on a person, the only things Paperclip pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// An agent's card (a question, a confirmation ...) waiting on a person.
    Question,
    /// An approval requested of the board.
    Approval,
    /// A run that failed or timed out.
    FailedRun,
    /// A budget hard stop that paused agents.
    BudgetStop,
    /// "Send a test notification" on the account page.
    Test,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeKind::Question => "question",
            NoticeKind::Approval => "approval",
            NoticeKind::FailedRun => "failed_run",
            NoticeKind::BudgetStop => "budget_stop",
            NoticeKind::Test => "test",
        }
    }
}

/// What a person wants pushed; every kind is on until they turn it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preferences {
    pub questions: bool,
    pub approvals: bool,
    pub failed_runs: bool,
    pub budget_stops: bool,
}

impl Default for Preferences {
    fn default() -> Preferences {
        Preferences {
            questions: true,
            approvals: true,
            failed_runs: true,
            budget_stops: true,
        }
    }
}

impl Preferences {
    pub fn wants(&self, kind: NoticeKind) -> bool {
        match kind {
            NoticeKind::Question => self.questions,
            NoticeKind::Approval => self.approvals,
            NoticeKind::FailedRun => self.failed_runs,
            NoticeKind::BudgetStop => self.budget_stops,
            // Asked for by the person, on their own devices.
            NoticeKind::Test => true,
        }
    }
}

/// What a notification's signed action link does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkAction {
    /// Approve an approval.
    Approve,
    /// Reject an approval.
    Reject,
    /// Answer a card with a comment in the task's thread.
    Reply,
}

impl LinkAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkAction::Approve => "approve",
            LinkAction::Reject => "reject",
            LinkAction::Reply => "reply",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_turned_off_is_not_wanted_and_a_test_always_is() {
        let prefs = Preferences {
            approvals: false,
            ..Preferences::default()
        };
        assert!(!prefs.wants(NoticeKind::Approval));
        assert!(prefs.wants(NoticeKind::Question));
        let none = Preferences {
            questions: false,
            approvals: false,
            failed_runs: false,
            budget_stops: false,
        };
        assert!(none.wants(NoticeKind::Test));
        assert_eq!(
            serde_json::to_value(NoticeKind::FailedRun).unwrap(),
            "failed_run"
        );
        assert!(serde_json::from_str::<LinkAction>("\"delete\"").is_err());
    }
}
