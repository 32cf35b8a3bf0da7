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

/// Where an approval stands: `pending` until decided; a revision request
/// comes back `pending` on resubmit; the others are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Rejected,
    RevisionRequested,
    Cancelled,
}

impl ApprovalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Rejected => "rejected",
            ApprovalStatus::RevisionRequested => "revision_requested",
            ApprovalStatus::Cancelled => "cancelled",
        }
    }

    /// Still waiting for someone: pending, or sent back for a revision.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            ApprovalStatus::Pending | ApprovalStatus::RevisionRequested
        )
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
    pub fn apply(self, from: ApprovalStatus) -> Option<ApprovalStatus> {
        use ApprovalStatus::*;
        match (from, self) {
            (Pending, ApprovalAction::Approve) => Some(Approved),
            (Pending, ApprovalAction::Reject) => Some(Rejected),
            (Pending, ApprovalAction::RequestRevision) => Some(RevisionRequested),
            (Pending | RevisionRequested, ApprovalAction::Cancel) => Some(Cancelled),
            (RevisionRequested, ApprovalAction::Resubmit) => Some(Pending),
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
    use super::ApprovalStatus::{self, *};

    #[test]
    fn decisions_are_final_and_revisions_come_back_pending() {
        assert_eq!(Approve.apply(Pending), Some(Approved));
        assert_eq!(RequestRevision.apply(Pending), Some(RevisionRequested));
        assert_eq!(Resubmit.apply(RevisionRequested), Some(Pending));
        assert_eq!(Approve.apply(RevisionRequested), None);
        for decided in [Approved, Rejected, ApprovalStatus::Cancelled] {
            for action in [Approve, Reject, RequestRevision, Resubmit, Cancel] {
                assert_eq!(action.apply(decided), None, "{decided:?} is final");
            }
        }
    }
}
