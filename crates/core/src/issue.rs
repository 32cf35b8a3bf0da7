//! Issue (task) statuses, priorities and the transition table.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IssueStatus {
    Backlog,
    Todo,
    InProgress,
    InReview,
    Done,
    Blocked,
    Cancelled,
}

impl IssueStatus {
    pub const ALL: [IssueStatus; 7] = [
        IssueStatus::Backlog,
        IssueStatus::Todo,
        IssueStatus::InProgress,
        IssueStatus::InReview,
        IssueStatus::Done,
        IssueStatus::Blocked,
        IssueStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            IssueStatus::Backlog => "backlog",
            IssueStatus::Todo => "todo",
            IssueStatus::InProgress => "in_progress",
            IssueStatus::InReview => "in_review",
            IssueStatus::Done => "done",
            IssueStatus::Blocked => "blocked",
            IssueStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<IssueStatus> {
        IssueStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Done and cancelled: the work is over, and nothing wakes an agent for
    /// it, until someone reopens it.
    pub fn is_terminal(self) -> bool {
        matches!(self, IssueStatus::Done | IssueStatus::Cancelled)
    }

    /// The upstream V1 transition table, plus reopening: a done or cancelled
    /// task goes back to backlog, todo or in_progress (upstream's current
    /// server lets any status follow any other; these are the moves that
    /// mean "more work", the rest stay refused). Staying in the same status
    /// is always allowed (a PATCH that repeats the status is not a transition).
    pub fn can_transition_to(self, to: IssueStatus) -> bool {
        use IssueStatus::*;
        if self == to {
            return true;
        }
        match self {
            Backlog => matches!(to, Todo | Cancelled),
            Todo => matches!(to, InProgress | Blocked | Cancelled),
            InProgress => matches!(to, InReview | Blocked | Done | Cancelled),
            InReview => matches!(to, InProgress | Done | Cancelled),
            Blocked => matches!(to, Todo | InProgress | Cancelled),
            Done | Cancelled => matches!(to, Backlog | Todo | InProgress),
        }
    }
}

/// Why `from -> to` is refused, naming the moves that are allowed.
pub fn transition_refusal(from: IssueStatus, to: IssueStatus) -> String {
    let allowed: Vec<&str> = IssueStatus::ALL
        .into_iter()
        .filter(|s| *s != from && from.can_transition_to(*s))
        .map(IssueStatus::as_str)
        .collect();
    let hint = if from.is_terminal() {
        format!(
            "a {} task is reopened first (to {})",
            from.as_str(),
            allowed.join(", ")
        )
    } else {
        format!(
            "from {} it can move to {}",
            from.as_str(),
            allowed.join(", ")
        )
    };
    format!(
        "Cannot transition issue from {} to {}: {hint}",
        from.as_str(),
        to.as_str()
    )
}

/// Who asks to reopen a closed task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reopener {
    /// A person (or the local board).
    Board,
    /// The agent the task is assigned to.
    Assignee,
    /// Any other agent.
    OtherAgent,
}

/// Why a reopen is refused, as upstream answers it: another agent's work is
/// not an agent's to reopen (403); a cancelled task comes back through the
/// board, not through its own agent (409).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReopenRefusal {
    Forbidden(&'static str),
    Conflict(&'static str),
}

pub fn reopen_refusal(from: IssueStatus, by: Reopener) -> Option<ReopenRefusal> {
    match by {
        Reopener::Board => None,
        Reopener::OtherAgent => Some(ReopenRefusal::Forbidden(
            "Only the task's assignee or the board can reopen a closed task",
        )),
        Reopener::Assignee if from == IssueStatus::Cancelled => Some(ReopenRefusal::Conflict(
            "A cancelled task is restored by the board, not by its agent",
        )),
        Reopener::Assignee => None,
    }
}

/// Whether a comment reopens its task. Upstream's rule: a person's comment
/// on closed work an agent owns is a follow-up, so the task goes back to
/// todo; an agent's comment is talk unless it asks. An explicit `reopen`
/// decides either way (`false`: just a note, nobody is woken).
pub fn comment_reopens(
    status: IssueStatus,
    by: Reopener,
    agent_assignee: bool,
    asked: Option<bool>,
) -> bool {
    if !status.is_terminal() {
        return false;
    }
    asked.unwrap_or(by == Reopener::Board && agent_assignee)
}

/// Timestamp columns a transition sets. Computed here so that the store applies
/// exactly what the rule says and nothing else.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TransitionEffects {
    pub set_started_at: bool,
    pub set_completed_at: bool,
    pub set_cancelled_at: bool,
    /// Reopened: the task is neither completed nor cancelled any more.
    pub clear_closed_at: bool,
}

pub fn transition_effects(from: IssueStatus, to: IssueStatus) -> TransitionEffects {
    if from == to {
        return TransitionEffects::default();
    }
    TransitionEffects {
        set_started_at: to == IssueStatus::InProgress,
        set_completed_at: to == IssueStatus::Done,
        set_cancelled_at: to == IssueStatus::Cancelled,
        clear_closed_at: from.is_terminal() && !to.is_terminal(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IssuePriority {
    Critical,
    High,
    Medium,
    Low,
}

impl IssuePriority {
    pub fn as_str(self) -> &'static str {
        match self {
            IssuePriority::Critical => "critical",
            IssuePriority::High => "high",
            IssuePriority::Medium => "medium",
            IssuePriority::Low => "low",
        }
    }
}

/// Splits `ACM-12` into its prefix and number; anything else is not an identifier.
pub fn parse_identifier(s: &str) -> Option<(&str, i64)> {
    let (prefix, number) = s.split_once('-')?;
    if prefix.is_empty() || !prefix.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let n: i64 = number.parse().ok()?;
    (n > 0).then_some((prefix, n))
}

#[cfg(test)]
mod tests {
    use super::IssueStatus::*;
    use super::*;

    #[test]
    fn transition_table_matches_upstream_for_every_pair() {
        let allowed: &[(IssueStatus, IssueStatus)] = &[
            (Backlog, Todo),
            (Backlog, Cancelled),
            (Todo, InProgress),
            (Todo, Blocked),
            (Todo, Cancelled),
            (InProgress, InReview),
            (InProgress, Blocked),
            (InProgress, Done),
            (InProgress, Cancelled),
            (InReview, InProgress),
            (InReview, Done),
            (InReview, Cancelled),
            (Blocked, Todo),
            (Blocked, InProgress),
            (Blocked, Cancelled),
            // Reopening.
            (Done, Backlog),
            (Done, Todo),
            (Done, InProgress),
            (Cancelled, Backlog),
            (Cancelled, Todo),
            (Cancelled, InProgress),
        ];
        for from in IssueStatus::ALL {
            for to in IssueStatus::ALL {
                let expected = from == to || allowed.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from:?} -> {to:?}");
            }
        }
    }

    #[test]
    fn effects_follow_the_target_status() {
        assert!(transition_effects(Todo, InProgress).set_started_at);
        assert!(transition_effects(InReview, Done).set_completed_at);
        assert!(transition_effects(Backlog, Cancelled).set_cancelled_at);
        assert_eq!(transition_effects(Done, Done), TransitionEffects::default());
        assert!(transition_effects(Done, Todo).clear_closed_at);
        assert!(transition_effects(Cancelled, InProgress).clear_closed_at);
        assert!(!transition_effects(InReview, Done).clear_closed_at);
    }

    #[test]
    fn a_refusal_names_the_way_out() {
        let closed = transition_refusal(Done, InReview);
        assert!(closed.starts_with("Cannot transition issue from done to in_review"));
        assert!(
            closed.contains("reopened first (to backlog, todo, in_progress)"),
            "{closed}"
        );
        let open = transition_refusal(Backlog, Done);
        assert!(
            open.ends_with("from backlog it can move to todo, cancelled"),
            "{open}"
        );
    }

    #[test]
    fn only_the_board_and_the_assignee_reopen() {
        assert_eq!(reopen_refusal(Cancelled, Reopener::Board), None);
        assert_eq!(reopen_refusal(Done, Reopener::Assignee), None);
        assert!(matches!(
            reopen_refusal(Cancelled, Reopener::Assignee),
            Some(ReopenRefusal::Conflict(_))
        ));
        assert!(matches!(
            reopen_refusal(Done, Reopener::OtherAgent),
            Some(ReopenRefusal::Forbidden(_))
        ));
    }

    #[test]
    fn a_persons_comment_reopens_an_agents_closed_work() {
        use Reopener::*;
        assert!(comment_reopens(Done, Board, true, None));
        assert!(comment_reopens(Cancelled, Board, true, None));
        // Nobody would pick it up, unless asked to reopen anyway.
        assert!(!comment_reopens(Done, Board, false, None));
        assert!(comment_reopens(Done, Board, false, Some(true)));
        assert!(!comment_reopens(Done, Board, true, Some(false)));
        // An agent's comment is talk unless it asks.
        assert!(!comment_reopens(Done, Assignee, true, None));
        assert!(!comment_reopens(Done, OtherAgent, true, None));
        assert!(comment_reopens(Done, Assignee, true, Some(true)));
        // Open work is not reopened.
        assert!(!comment_reopens(InProgress, Board, true, Some(true)));
    }

    #[test]
    fn identifiers_parse_only_when_well_formed() {
        assert_eq!(parse_identifier("ACM-12"), Some(("ACM", 12)));
        assert_eq!(parse_identifier("ACM-0"), None);
        assert_eq!(parse_identifier("ACM"), None);
        assert_eq!(parse_identifier("505e276f-bcac-4cc7"), None);
        assert_eq!(parse_identifier("-3"), None);
    }
}
