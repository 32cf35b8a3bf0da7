//! Approval types and the decision state machine.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalType {
    HireAgent,
    ApproveCeoStrategy,
    BudgetOverrideRequired,
    RequestBoardApproval,
}

impl ApprovalType {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalType::HireAgent => "hire_agent",
            ApprovalType::ApproveCeoStrategy => "approve_ceo_strategy",
            ApprovalType::BudgetOverrideRequired => "budget_override_required",
            ApprovalType::RequestBoardApproval => "request_board_approval",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAction {
    Approve,
    Reject,
    RequestRevision,
    Resubmit,
    Cancel,
}

impl ApprovalAction {
    /// The status the action leads to from `from`, or `None` if not allowed:
    /// pending -> approved | rejected | revision_requested | cancelled;
    /// revision_requested -> pending (resubmit) | cancelled. Decided ones are final.
    pub fn apply(self, from: &str) -> Option<&'static str> {
        match (from, self) {
            ("pending", ApprovalAction::Approve) => Some("approved"),
            ("pending", ApprovalAction::Reject) => Some("rejected"),
            ("pending", ApprovalAction::RequestRevision) => Some("revision_requested"),
            ("pending" | "revision_requested", ApprovalAction::Cancel) => Some("cancelled"),
            ("revision_requested", ApprovalAction::Resubmit) => Some("pending"),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalAction::Approve => "approve",
            ApprovalAction::Reject => "reject",
            ApprovalAction::RequestRevision => "request-revision",
            ApprovalAction::Resubmit => "resubmit",
            ApprovalAction::Cancel => "cancel",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ApprovalAction::*;

    #[test]
    fn decisions_are_final_and_revisions_come_back_pending() {
        assert_eq!(Approve.apply("pending"), Some("approved"));
        assert_eq!(RequestRevision.apply("pending"), Some("revision_requested"));
        assert_eq!(Resubmit.apply("revision_requested"), Some("pending"));
        assert_eq!(Approve.apply("revision_requested"), None);
        for decided in ["approved", "rejected", "cancelled"] {
            for action in [Approve, Reject, RequestRevision, Resubmit, Cancel] {
                assert_eq!(action.apply(decided), None, "{decided} is final");
            }
        }
    }
}
