//! Did a finished run move its work forward? (upstream's `livenessState`.)
//! Decided from what the run left behind on the board (comments, document
//! revisions, other changes its agent made while it ran), whether it wrote
//! any output, and where its task ended up. A run that changed nothing is
//! the one that may have burned tokens for nothing, so it is named as such.
//! Upstream also reads the output's wording to tell plans from work; this
//! rule does not guess from text.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::heartbeat::RunStatus;
use crate::issue::IssueStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Liveness {
    /// Its task is done or cancelled.
    Completed,
    /// It changed something on the board.
    Advanced,
    /// Its task is blocked.
    Blocked,
    /// The run itself did not succeed.
    Failed,
    /// It wrote output but changed nothing: someone should look.
    NeedsFollowup,
    /// It succeeded without output or any change.
    EmptyResponse,
}

impl Liveness {
    pub fn as_str(self) -> &'static str {
        match self {
            Liveness::Completed => "completed",
            Liveness::Advanced => "advanced",
            Liveness::Blocked => "blocked",
            Liveness::Failed => "failed",
            Liveness::NeedsFollowup => "needs_followup",
            Liveness::EmptyResponse => "empty_response",
        }
    }
}

/// What the run's agent did on the board while the run was live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    pub comments: i64,
    pub document_revisions: i64,
    /// Any other change attributed to the run (task updates, child tasks, ...).
    pub other_changes: i64,
    /// When the latest of them happened.
    pub latest_at: Option<String>,
}

impl Evidence {
    fn total(&self) -> i64 {
        self.comments + self.document_revisions + self.other_changes
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.comments, "comment"),
            (self.document_revisions, "document revision"),
            (self.other_changes, "other change"),
        ] {
            match n {
                0 => {}
                1 => parts.push(format!("1 {what}")),
                n => parts.push(format!("{n} {what}s")),
            }
        }
        parts.join(", ")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub state: Liveness,
    pub reason: String,
    /// The latest change, for runs that made progress (or finished the task).
    pub last_useful_action_at: Option<String>,
}

pub fn classify(
    status: RunStatus,
    error_code: Option<&str>,
    task: Option<IssueStatus>,
    wrote_output: bool,
    evidence: &Evidence,
) -> Verdict {
    let useful_at = || evidence.latest_at.clone().filter(|_| evidence.total() > 0);
    let verdict = |state, reason: String, at: Option<String>| Verdict {
        state,
        reason,
        last_useful_action_at: at,
    };
    if status != RunStatus::Succeeded {
        let reason = match error_code {
            Some(code) => format!("Run ended {} ({code})", status.as_str()),
            None => format!("Run ended {}", status.as_str()),
        };
        return verdict(Liveness::Failed, reason, None);
    }
    match task {
        Some(s @ (IssueStatus::Done | IssueStatus::Cancelled)) => {
            return verdict(
                Liveness::Completed,
                format!("Its task is {}", s.as_str()),
                useful_at(),
            )
        }
        Some(IssueStatus::Blocked) => {
            return verdict(Liveness::Blocked, "Its task is blocked".into(), useful_at())
        }
        _ => {}
    }
    if evidence.total() > 0 {
        return verdict(
            Liveness::Advanced,
            format!("Run left {} on the board", evidence.describe()),
            useful_at(),
        );
    }
    if wrote_output {
        return verdict(
            Liveness::NeedsFollowup,
            "Run wrote output but changed nothing on the board".into(),
            None,
        );
    }
    verdict(
        Liveness::EmptyResponse,
        "Run succeeded without output or any change on the board".into(),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(comments: i64) -> Evidence {
        Evidence {
            comments,
            latest_at: Some("2026-12-04T00:00:00.000Z".into()),
            ..Evidence::default()
        }
    }

    #[test]
    fn failures_first_then_the_task_then_the_evidence() {
        let v = classify(RunStatus::TimedOut, Some("timeout"), None, true, &some(2));
        assert_eq!(v.state, Liveness::Failed);
        assert_eq!(v.reason, "Run ended timed_out (timeout)");
        let v = classify(
            RunStatus::Succeeded,
            None,
            Some(IssueStatus::Done),
            false,
            &some(1),
        );
        assert_eq!(v.state, Liveness::Completed);
        assert!(v.last_useful_action_at.is_some());
        let v = classify(
            RunStatus::Succeeded,
            None,
            Some(IssueStatus::Blocked),
            true,
            &Evidence::default(),
        );
        assert_eq!(v.state, Liveness::Blocked);
        assert_eq!(v.last_useful_action_at, None, "no change, no useful action");
        let v = classify(
            RunStatus::Succeeded,
            None,
            Some(IssueStatus::InProgress),
            true,
            &some(2),
        );
        assert_eq!(v.state, Liveness::Advanced);
        assert_eq!(v.reason, "Run left 2 comments on the board");
    }

    #[test]
    fn a_run_that_changed_nothing_is_named() {
        let none = Evidence::default();
        let v = classify(
            RunStatus::Succeeded,
            None,
            Some(IssueStatus::Todo),
            true,
            &none,
        );
        assert_eq!(v.state, Liveness::NeedsFollowup);
        let v = classify(RunStatus::Succeeded, None, None, false, &none);
        assert_eq!(v.state, Liveness::EmptyResponse);
    }
}
