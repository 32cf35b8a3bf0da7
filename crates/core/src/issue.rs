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

    /// Done and cancelled issues accept no further transition.
    pub fn is_terminal(self) -> bool {
        matches!(self, IssueStatus::Done | IssueStatus::Cancelled)
    }

    /// The upstream V1 transition table. Staying in the same status is always
    /// allowed (a PATCH that repeats the status is not a transition).
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
            Done | Cancelled => false,
        }
    }
}

/// Timestamp columns a transition sets. Computed here so that the store applies
/// exactly what the rule says and nothing else.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TransitionEffects {
    pub set_started_at: bool,
    pub set_completed_at: bool,
    pub set_cancelled_at: bool,
}

pub fn transition_effects(from: IssueStatus, to: IssueStatus) -> TransitionEffects {
    if from == to {
        return TransitionEffects::default();
    }
    TransitionEffects {
        set_started_at: to == IssueStatus::InProgress,
        set_completed_at: to == IssueStatus::Done,
        set_cancelled_at: to == IssueStatus::Cancelled,
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
