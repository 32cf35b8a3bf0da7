//! Upstream's attention rollups on a task: `blockerAttention` (is a blocked
//! task's way forward being worked on?) and `reviewAttention` (does a task
//! in review have someone or something that will act on it?).
//!
//! Both follow the original's rules over the facts a task page already reads
//! in its one relations query, so a page costs no extra query per task. Two
//! bounds, named so nobody mistakes them for the original's full walk: a
//! blocker is judged by itself (its own blockers are not walked), and "live"
//! work is a run holding the task's execution lock (a wake still queued for
//! it is not seen here).

use serde::Serialize;
use utoipa::ToSchema;

use crate::issue::IssueStatus;

/// A blocked task's blockers, summed up (upstream's `IssueBlockerAttention`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockerAttention {
    /// `none`, `covered`, `stalled` or `needs_attention`.
    pub state: &'static str,
    /// `active_child`, `active_dependency`, `stalled_review` or `attention_required`.
    pub reason: Option<&'static str>,
    pub unresolved_blocker_count: i64,
    pub covered_blocker_count: i64,
    pub stalled_blocker_count: i64,
    pub attention_blocker_count: i64,
    /// Blockers done but still finalising upstream; a done task here is done.
    pub pending_finalize_blocker_issue_ids: Vec<String>,
    pub sample_blocker_identifier: Option<String>,
    pub sample_stalled_blocker_identifier: Option<String>,
    pub blocking_tree_live: bool,
    pub direct_blocker_issue_id: Option<String>,
    pub terminal_blocker_issue_id: Option<String>,
    pub terminal_blocker: Option<BlockerSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct BlockerSummary {
    pub id: String,
    pub identifier: Option<String>,
    pub title: String,
}

impl BlockerAttention {
    pub fn none() -> BlockerAttention {
        BlockerAttention {
            state: "none",
            reason: None,
            unresolved_blocker_count: 0,
            covered_blocker_count: 0,
            stalled_blocker_count: 0,
            attention_blocker_count: 0,
            pending_finalize_blocker_issue_ids: Vec::new(),
            sample_blocker_identifier: None,
            sample_stalled_blocker_identifier: None,
            blocking_tree_live: false,
            direct_blocker_issue_id: None,
            terminal_blocker_issue_id: None,
            terminal_blocker: None,
        }
    }
}

/// What the attention rules read of one blocker.
#[derive(Debug, Clone)]
pub struct Blocker {
    pub id: String,
    pub identifier: String,
    pub title: String,
    pub status: IssueStatus,
    /// A person is assigned: a person's work counts as covered.
    pub has_user: bool,
    /// A run holds its execution lock.
    pub live: bool,
    /// It is a subtask of the blocked task.
    pub child: bool,
}

enum Path {
    Covered,
    Stalled,
    Attention,
}

fn classify(b: &Blocker) -> Path {
    if b.has_user && b.status != IssueStatus::Cancelled {
        return Path::Covered;
    }
    match b.status {
        IssueStatus::InReview if b.live => Path::Covered,
        IssueStatus::InReview => Path::Stalled,
        _ if b.live => Path::Covered,
        _ => Path::Attention,
    }
}

/// The blocker attention of task `id` in `status` with its direct blockers.
/// Only a blocked task has any; a blocked task with nothing open blocking it
/// needs attention itself.
pub fn blocker_attention(
    id: &str,
    identifier: &str,
    title: &str,
    status: IssueStatus,
    blockers: &[Blocker],
) -> BlockerAttention {
    if status != IssueStatus::Blocked {
        return BlockerAttention::none();
    }
    let open: Vec<&Blocker> = blockers
        .iter()
        .filter(|b| b.status != IssueStatus::Done)
        .collect();
    if open.is_empty() {
        return BlockerAttention {
            state: "needs_attention",
            reason: Some("attention_required"),
            sample_blocker_identifier: None,
            terminal_blocker_issue_id: Some(id.to_string()),
            terminal_blocker: Some(BlockerSummary {
                id: id.to_string(),
                identifier: Some(identifier.to_string()),
                title: title.to_string(),
            }),
            ..BlockerAttention::none()
        };
    }
    let paths: Vec<(&Blocker, Path)> = open.iter().map(|b| (*b, classify(b))).collect();
    let count = |want: fn(&Path) -> bool| paths.iter().filter(|(_, p)| want(p)).count() as i64;
    let covered = count(|p| matches!(p, Path::Covered));
    let stalled = count(|p| matches!(p, Path::Stalled));
    let attention = paths.len() as i64 - covered - stalled;
    let hard = paths.iter().find(|(_, p)| matches!(p, Path::Attention));
    let stalled_one = paths.iter().find(|(_, p)| matches!(p, Path::Stalled));
    let sample = hard.or(stalled_one).or(paths.first()).map(|(b, _)| *b);
    let (state, reason) = if attention > 0 {
        ("needs_attention", "attention_required")
    } else if stalled > 0 {
        ("stalled", "stalled_review")
    } else if open.iter().all(|b| b.child) {
        ("covered", "active_child")
    } else {
        ("covered", "active_dependency")
    };
    // Upstream names a terminal blocker only on a path that needs action.
    let terminal = hard.or(stalled_one).map(|(b, _)| *b);
    BlockerAttention {
        state,
        reason: Some(reason),
        unresolved_blocker_count: paths.len() as i64,
        covered_blocker_count: covered,
        stalled_blocker_count: stalled,
        attention_blocker_count: attention,
        pending_finalize_blocker_issue_ids: Vec::new(),
        sample_blocker_identifier: sample.map(|b| b.identifier.clone()),
        sample_stalled_blocker_identifier: stalled_one.map(|(b, _)| b.identifier.clone()),
        blocking_tree_live: open
            .iter()
            .any(|b| b.status == IssueStatus::InProgress || b.live || b.has_user),
        direct_blocker_issue_id: sample.map(|b| b.id.clone()),
        terminal_blocker_issue_id: terminal.map(|b| b.id.clone()),
        terminal_blocker: terminal.map(|b| BlockerSummary {
            id: b.id.clone(),
            identifier: Some(b.identifier.clone()),
            title: b.title.clone(),
        }),
    }
}

/// Whether a task in review has a maintained way forward (upstream's
/// `IssueReviewAttention`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ReviewAttention {
    /// `none` (not in review), `covered` or `stalled`.
    pub state: &'static str,
    pub paths: Vec<ReviewPath>,
    pub reason: Option<String>,
}

/// One way a review will be acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ReviewPath {
    /// `human_reviewer`, `monitor` or `active_run` here.
    pub kind: &'static str,
    pub label: &'static str,
    /// Who will act: the person's or the agent's id.
    pub responder: Option<String>,
    pub since: Option<String>,
    #[serde(rename = "ref")]
    pub reference: Option<String>,
}

impl ReviewAttention {
    pub fn none() -> ReviewAttention {
        ReviewAttention {
            state: "none",
            paths: Vec::new(),
            reason: None,
        }
    }
}

/// What the review rules read of the task itself.
pub struct ReviewFacts<'a> {
    pub status: IssueStatus,
    pub assignee_user_id: Option<&'a str>,
    pub assignee_agent_id: Option<&'a str>,
    pub execution_run_id: Option<&'a str>,
    pub execution_locked_at: Option<&'a str>,
    pub monitor_next_check_at: Option<&'a str>,
    pub updated_at: &'a str,
}

/// The review attention of a task; `now` in the store's timestamp format
/// (a monitor whose check is past due is no longer a way forward).
pub fn review_attention(f: &ReviewFacts<'_>, now: &str) -> ReviewAttention {
    if f.status != IssueStatus::InReview {
        return ReviewAttention::none();
    }
    let mut paths = Vec::new();
    if let Some(user) = f.assignee_user_id {
        paths.push(ReviewPath {
            kind: "human_reviewer",
            label: "Human reviewer",
            responder: Some(user.to_string()),
            since: Some(f.updated_at.to_string()),
            reference: Some(user.to_string()),
        });
    }
    if f.monitor_next_check_at.is_some_and(|at| at > now) {
        paths.push(ReviewPath {
            kind: "monitor",
            label: "Scheduled review monitor",
            responder: f.assignee_agent_id.map(str::to_string),
            since: Some(f.updated_at.to_string()),
            reference: None,
        });
    }
    if let Some(run) = f.execution_run_id {
        paths.push(ReviewPath {
            kind: "active_run",
            label: "Active review run",
            responder: f.assignee_agent_id.map(str::to_string),
            since: Some(f.execution_locked_at.unwrap_or(f.updated_at).to_string()),
            reference: Some(run.to_string()),
        });
    }
    if paths.is_empty() {
        return ReviewAttention {
            state: "stalled",
            paths,
            reason: Some("Issue is in review without a maintained action path.".into()),
        };
    }
    let reason = match paths.len() {
        1 => "Review has a maintained action path.".to_string(),
        n => format!("Review has {n} maintained action paths."),
    };
    ReviewAttention {
        state: "covered",
        paths,
        reason: Some(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocker(n: u8, status: IssueStatus) -> Blocker {
        Blocker {
            id: format!("b{n}"),
            identifier: format!("ACM-{n}"),
            title: format!("blocker {n}"),
            status,
            has_user: false,
            live: false,
            child: false,
        }
    }

    #[test]
    fn only_a_blocked_task_has_blocker_attention() {
        let open = [blocker(1, IssueStatus::Todo)];
        for status in IssueStatus::ALL {
            let a = blocker_attention("t", "ACM-9", "t", status, &open);
            assert_eq!(
                a.state == "none",
                status != IssueStatus::Blocked,
                "{status:?}"
            );
        }
    }

    #[test]
    fn a_blocked_task_with_nothing_open_needs_attention_itself() {
        let done = [blocker(1, IssueStatus::Done)];
        let a = blocker_attention("t", "ACM-9", "the task", IssueStatus::Blocked, &done);
        assert_eq!(
            (a.state, a.reason),
            ("needs_attention", Some("attention_required"))
        );
        assert_eq!(a.unresolved_blocker_count, 0);
        assert_eq!(a.terminal_blocker_issue_id.as_deref(), Some("t"));
    }

    #[test]
    fn blockers_are_covered_stalled_or_need_attention() {
        let mut live = blocker(1, IssueStatus::InProgress);
        live.live = true;
        live.child = true;
        let a = blocker_attention("t", "ACM-9", "t", IssueStatus::Blocked, &[live.clone()]);
        assert_eq!((a.state, a.reason), ("covered", Some("active_child")));
        assert!(a.blocking_tree_live);
        assert_eq!(a.terminal_blocker, None);

        let review = blocker(2, IssueStatus::InReview);
        let a = blocker_attention(
            "t",
            "ACM-9",
            "t",
            IssueStatus::Blocked,
            &[live.clone(), review],
        );
        assert_eq!((a.state, a.reason), ("stalled", Some("stalled_review")));
        assert_eq!(
            a.sample_stalled_blocker_identifier.as_deref(),
            Some("ACM-2")
        );
        assert_eq!((a.covered_blocker_count, a.stalled_blocker_count), (1, 1));

        let idle = blocker(3, IssueStatus::Todo);
        let a = blocker_attention("t", "ACM-9", "t", IssueStatus::Blocked, &[live, idle]);
        assert_eq!(a.state, "needs_attention");
        assert_eq!(a.terminal_blocker_issue_id.as_deref(), Some("b3"));
        assert_eq!(a.direct_blocker_issue_id.as_deref(), Some("b3"));
        assert_eq!(a.attention_blocker_count, 1);

        let mut person = blocker(4, IssueStatus::Todo);
        person.has_user = true;
        let a = blocker_attention("t", "ACM-9", "t", IssueStatus::Blocked, &[person]);
        assert_eq!((a.state, a.reason), ("covered", Some("active_dependency")));
    }

    fn facts(status: IssueStatus) -> ReviewFacts<'static> {
        ReviewFacts {
            status,
            assignee_user_id: None,
            assignee_agent_id: Some("agent"),
            execution_run_id: None,
            execution_locked_at: None,
            monitor_next_check_at: None,
            updated_at: "2026-01-01T00:00:00.000Z",
        }
    }

    #[test]
    fn a_review_without_a_way_forward_is_stalled() {
        let now = "2026-01-02T00:00:00.000Z";
        assert_eq!(
            review_attention(&facts(IssueStatus::Todo), now),
            ReviewAttention::none()
        );
        assert_eq!(
            review_attention(&facts(IssueStatus::InReview), now).state,
            "stalled"
        );
        let mut f = facts(IssueStatus::InReview);
        f.monitor_next_check_at = Some("2026-01-01T12:00:00.000Z");
        assert_eq!(
            review_attention(&f, now).state,
            "stalled",
            "a past-due monitor"
        );
        f.monitor_next_check_at = Some("2026-01-03T00:00:00.000Z");
        f.assignee_user_id = Some("user-1");
        f.execution_run_id = Some("run-1");
        let a = review_attention(&f, now);
        assert_eq!(a.state, "covered");
        let kinds: Vec<_> = a.paths.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, ["human_reviewer", "monitor", "active_run"]);
        assert_eq!(
            a.reason.as_deref(),
            Some("Review has 3 maintained action paths.")
        );
    }
}
