//! Vocabulary kept in the database as text. Reading it back is strict: a
//! value no enum variant names is an error the store reports, never a
//! silent default (a status `backlog` the row never had would hide the
//! corruption and move work).

use crate::agent::{AgentRole, AgentStatus};
use crate::approval::{ApprovalStatus, ApprovalType};
use crate::budget::{BudgetScope, IncidentKind, IncidentResolution, IncidentStatus};
use crate::company::CompanyStatus;
use crate::company_secret::{SecretProvider, SecretStatus};
use crate::goal::{GoalLevel, GoalStatus};
use crate::heartbeat::{RunStatus, WakeSkipReason, WakeSource, WakeStatus};
use crate::interaction::{ContinuationPolicy, InteractionKind, InteractionStatus, ResolverPolicy};
use crate::issue::{IssuePriority, IssueStatus};
use crate::project::ProjectStatus;
use crate::run_liveness::Liveness;

pub trait Stored: Sized + Copy + 'static {
    /// What the value is, for the error that names a bad one.
    const WHAT: &'static str;
    const ALL: &'static [Self];
    fn as_str(self) -> &'static str;

    fn from_stored(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.as_str() == text)
    }
}

/// An enum kept as text, its words its variants in snake_case: the type,
/// its `as_str`, and its strict reading back.
macro_rules! stored_words {
    ($t:ident, $what:literal, [$($v:ident = $s:literal),* $(,)?]) => {
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
        )]
        #[serde(rename_all = "snake_case")]
        pub enum $t { $($v),* }
        impl $t {
            pub fn as_str(self) -> &'static str { match self { $($t::$v => $s),* } }
        }
        impl $crate::stored::Stored for $t {
            const WHAT: &'static str = $what;
            const ALL: &'static [$t] = &[$($t::$v),*];
            fn as_str(self) -> &'static str { $t::as_str(self) }
        }
    };
}
pub(crate) use stored_words;

macro_rules! stored {
    ($($t:ident: $what:literal [$($v:ident),* $(,)?];)*) => {
        $(impl Stored for $t {
            const WHAT: &'static str = $what;
            const ALL: &'static [$t] = &[$($t::$v),*];
            fn as_str(self) -> &'static str {
                $t::as_str(self)
            }
        }
        impl AsRef<str> for $t {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        })*
    };
}

stored! {
    IssueStatus: "issue status" [Backlog, Todo, InProgress, InReview, Done, Blocked, Cancelled];
    IssuePriority: "issue priority" [Critical, High, Medium, Low];
    AgentStatus: "agent status" [Active, Idle, Running, Error, Paused, PendingApproval, Terminated];
    AgentRole: "agent role" [Ceo, Cto, Cmo, Cfo, Security, Engineer, Designer, Pm, Qa, Devops, Researcher, General];
    CompanyStatus: "company status" [Active, Paused, Archived];
    ProjectStatus: "project status" [Backlog, Planned, InProgress, Completed, Cancelled];
    GoalLevel: "goal level" [Company, Team, Agent, Task];
    GoalStatus: "goal status" [Planned, Active, Achieved, Cancelled];
    RunStatus: "run status" [Queued, Running, Succeeded, Failed, Cancelled, TimedOut];
    Liveness: "run liveness" [Completed, Advanced, Blocked, Failed, NeedsFollowup, EmptyResponse];
    SecretStatus: "secret status" [Active, Disabled, Archived];
    SecretProvider: "secret provider" [LocalEncrypted];
    InteractionKind: "interaction kind" [SuggestTasks, AskUserQuestions, RequestConfirmation, RequestCheckboxConfirmation, RequestItemVerdicts, ConnectionIntent];
    InteractionStatus: "interaction status" [Pending, Accepted, Rejected, Answered, Cancelled, Expired, Failed];
    ContinuationPolicy: "continuation policy" [None, WakeAssignee, WakeAssigneeOnAccept];
    ResolverPolicy: "resolver policy" [Anyone, NotCreator, HumanOnly];
    ApprovalType: "approval type" [HireAgent, ApproveCeoStrategy, BudgetOverrideRequired, RequestBoardApproval];
    ApprovalStatus: "approval status" [Pending, Approved, Rejected, RevisionRequested, Cancelled];
    WakeSource: "wake source" [Timer, Assignment, OnDemand, Automation];
    WakeStatus: "wake status" [Queued, Coalesced, Skipped, Claimed, Completed, Failed, Cancelled];
    WakeSkipReason: "wake skip reason" [BudgetBlocked, AgentPaused, AgentTerminated, AgentPendingApproval, DisabledByPolicy, NoWork, SelfWake, LoopHeld];
    BudgetScope: "budget scope" [Company, Agent, Project];
    IncidentKind: "budget incident kind" [Soft, Hard];
    IncidentStatus: "budget incident status" [Open, Resolved];
    IncidentResolution: "budget incident resolution" [BudgetRaised, Override, MonthRollover];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T>()
    where
        T: Stored + std::fmt::Debug + PartialEq + serde::Serialize + utoipa::ToSchema,
    {
        for v in T::ALL {
            assert_eq!(T::from_stored(v.as_str()), Some(*v));
            // The stored text is the API's text.
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        assert_eq!(T::from_stored("nonsense"), None);
        assert_eq!(T::from_stored(""), None);
        spec_is_wire(T::ALL);
    }

    /// The OpenAPI enum of `T` (what `/api/openapi.json` declares) lists
    /// exactly the texts `T` serializes to, in order.
    pub(crate) fn spec_is_wire<T: serde::Serialize + utoipa::ToSchema>(all: &[T]) {
        let schema = serde_json::to_value(<T as utoipa::PartialSchema>::schema()).unwrap();
        let wire: Vec<serde_json::Value> = all
            .iter()
            .map(|v| serde_json::to_value(v).unwrap())
            .collect();
        assert_eq!(
            schema["enum"].as_array(),
            Some(&wire),
            "{}: spec enum differs from the wire",
            T::name()
        );
    }

    #[test]
    fn every_stored_value_reads_back_and_nothing_else_does() {
        round_trips::<IssueStatus>();
        round_trips::<IssuePriority>();
        round_trips::<AgentStatus>();
        round_trips::<AgentRole>();
        round_trips::<CompanyStatus>();
        round_trips::<ProjectStatus>();
        round_trips::<GoalLevel>();
        round_trips::<GoalStatus>();
        round_trips::<RunStatus>();
        round_trips::<SecretStatus>();
        round_trips::<SecretProvider>();
        round_trips::<InteractionKind>();
        round_trips::<InteractionStatus>();
        round_trips::<ContinuationPolicy>();
        round_trips::<ResolverPolicy>();
        round_trips::<Liveness>();
        round_trips::<ApprovalType>();
        round_trips::<ApprovalStatus>();
        round_trips::<WakeSource>();
        round_trips::<WakeStatus>();
        round_trips::<WakeSkipReason>();
        round_trips::<BudgetScope>();
        round_trips::<IncidentKind>();
        round_trips::<IncidentStatus>();
        round_trips::<IncidentResolution>();
        use crate::routine::*;
        round_trips::<RoutineStatus>();
        round_trips::<ConcurrencyPolicy>();
        round_trips::<CatchUpPolicy>();
        round_trips::<ActivityGatePolicy>();
        round_trips::<ActivityGateScope>();
        round_trips::<TriggerKind>();
        round_trips::<SigningMode>();
        round_trips::<RunSource>();
        round_trips::<RoutineRunStatus>();
        round_trips::<VariableType>();
        use crate::work_product::*;
        round_trips::<WorkProductType>();
        round_trips::<WorkProductStatus>();
        round_trips::<ReviewState>();
        round_trips::<HealthStatus>();
        use crate::interaction::ItemVerdict;
        spec_is_wire(&[
            ItemVerdict::Approve,
            ItemVerdict::Reject,
            ItemVerdict::Defer,
        ]);
    }
}
