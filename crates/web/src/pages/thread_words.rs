//! A run in words, the way a person reads the thread: when it ran and for
//! how long, why it woke, and what came of it ("moved ACM-3 to done, posted
//! a comment", or "did nothing: its task is done"). Pure rules over the run
//! row and what the page already loaded, so every page says it the same way.

use chrono::{DateTime, Utc};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{ActivityEntry, HeartbeatRun};
use paperclip_core::run_liveness::Liveness;

/// How an outcome reads: good news, nothing to see, or a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Did,
    Idle,
    Nothing,
    Bad,
}

impl Tone {
    pub fn class(self) -> &'static str {
        match self {
            Tone::Did => "did",
            Tone::Idle => "idle",
            Tone::Nothing => "nothing",
            Tone::Bad => "bad",
        }
    }
}

fn parse(ts: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `850 ms`, `12.4 s`, `3 min 5 s`, `2 h 10 min`.
pub fn span(ms: i64) -> String {
    match ms.max(0) {
        m if m < 1000 => format!("{m} ms"),
        m if m < 60_000 => format!("{:.1} s", m as f64 / 1000.0),
        m if m < 3_600_000 => format!("{} min {} s", m / 60_000, (m % 60_000) / 1000),
        m => format!("{} h {} min", m / 3_600_000, (m % 3_600_000) / 60_000),
    }
}

/// Whole seconds for a clock that ticks (`5 s`, `3 min 5 s`); thread.js
/// formats the same way as it counts on.
pub fn ticking(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// How long the run took (or has been working); none before it started.
pub fn duration(run: &HeartbeatRun, now: DateTime<Utc>) -> Option<String> {
    let start = parse(run.started_at.as_deref()?)?;
    let end = match &run.finished_at {
        Some(t) => parse(t)?,
        None => now,
    };
    Some(span((end - start).num_milliseconds()))
}

/// "ran 9.1 s", "running for 5 s", "queued 12 s" or "never started".
pub fn took(run: &HeartbeatRun, now: DateTime<Utc>) -> String {
    let since = |ts: &str| parse(ts).map(|t| (now - t).num_milliseconds());
    match (
        run.status,
        run.started_at.as_deref(),
        run.finished_at.is_some(),
    ) {
        (RunStatus::Queued, _, _) => match since(&run.created_at) {
            Some(ms) => format!("queued for {}", ticking(ms)),
            None => "queued".into(),
        },
        (_, Some(start), false) => match since(start) {
            Some(ms) => format!("running for {}", ticking(ms)),
            None => "running".into(),
        },
        (_, Some(_), true) => format!("ran {}", duration(run, now).unwrap_or_default()),
        (_, None, _) => "never started".into(),
    }
}

/// Why the run woke, for a person: "Woken by a person's @mention".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waker<'a> {
    /// A person wrote the comment that woke it (their name when known).
    Person(Option<&'a str>),
    /// An agent wrote it.
    Agent(&'a str),
    Unknown,
}

/// The comment the run was woken for (the latest, when wakes folded in).
pub fn wake_comment_id(run: &HeartbeatRun) -> Option<&str> {
    let c = &run.context_snapshot;
    c.get("commentIds")
        .and_then(|ids| ids.as_array()?.last()?.as_str())
        .or_else(|| c.pointer("/payload/commentId")?.as_str())
}

/// "Woken by a person's @mention" when the comment's author is known (a
/// person's comment is not "an automation"); else the wake's reason in
/// the shared words (`core::words`): "Woken: assigned a task".
pub fn wake_words(run: &HeartbeatRun, waker: Waker) -> String {
    let whose = match waker {
        Waker::Person(Some(name)) => format!("{name}'s"),
        Waker::Person(None) => "a person's".into(),
        Waker::Agent(name) => format!("{name}'s"),
        Waker::Unknown => String::new(),
    };
    let reason = run.wake_reason.as_deref().unwrap_or("");
    let by_comment = match reason {
        "issue_comment_mentioned" => Some("@mention"),
        "issue_commented" => Some("comment"),
        "issue_reopened_via_comment" => Some("comment reopening the task"),
        _ => None,
    };
    match by_comment {
        Some(what) if !whose.is_empty() => format!("Woken by {whose} {what}"),
        _ => format!(
            "Woken: {}",
            crate::fmt::wake_why(Some(&run.invocation_source), run.wake_reason.as_deref())
        ),
    }
}

/// A stored failure code as a reason a person reads.
pub fn code_words(code: &str) -> String {
    match code {
        "nonzero_exit" => "the process exited with an error".into(),
        "timeout" => "it ran past its time limit".into(),
        "spawn_failed" => "its process could not be started".into(),
        "adapter_not_installed" => "its program is not installed".into(),
        "control_plane_restart" => "the server restarted while it worked".into(),
        "budget_exceeded" | "budget_blocked" => "the budget is spent".into(),
        "auth_required" => "its CLI has no working credentials".into(),
        "rate_limited" => "the provider's rate limit was reached".into(),
        "model_tool_use_unsupported" => "its model cannot call tools".into(),
        "permission_denied" => "it asked for a permission its policy refuses".into(),
        "k8s_oom_killed" => "its pod ran out of memory".into(),
        "k8s_job_deleted_externally" => "its Job was deleted outside Paperclip".into(),
        other => other.replace('_', " "),
    }
}

/// What the run's agent did to the task, from the task's activity rows
/// attributed to the run: "moved ACM-3 to done", "posted a comment".
pub fn board_changes<'a>(
    run_id: &str,
    entries: impl IntoIterator<Item = &'a ActivityEntry>,
) -> Vec<String> {
    let mut moves = Vec::new();
    let mut comments = 0;
    let mut edits: Vec<String> = Vec::new();
    let mut documents = 0;
    // Oldest first: the task's moves read in the order they happened.
    let mut mine: Vec<&ActivityEntry> = entries
        .into_iter()
        .filter(|e| e.run_id.as_deref() == Some(run_id) && e.actor_type == "agent")
        .collect();
    mine.sort_by(|a, b| a.id.cmp(&b.id));
    for e in mine {
        match e.action.as_str() {
            "issue.comment_added" => comments += 1,
            "issue.updated" => {
                let changes = e.details.get("changes").and_then(|c| c.as_object());
                for (field, change) in changes.into_iter().flatten() {
                    if field == "status" {
                        if let Some(to) = change.get("to").and_then(|t| t.as_str()) {
                            moves.push(format!("moved it to {}", to.replace('_', " ")));
                        }
                    } else {
                        let f = field_words(field);
                        if !edits.contains(&f) {
                            edits.push(f);
                        }
                    }
                }
            }
            a if a.starts_with("issue.document") => documents += 1,
            _ => {}
        }
    }
    let mut out = moves;
    match comments {
        0 => {}
        1 => out.push("posted a comment".into()),
        n => out.push(format!("posted {n} comments")),
    }
    if !edits.is_empty() {
        out.push(format!("changed its {}", edits.join(", ")));
    }
    match documents {
        0 => {}
        1 => out.push("wrote a document".into()),
        n => out.push(format!("wrote {n} document revisions")),
    }
    out
}

fn field_words(field: &str) -> String {
    match field {
        "assigneeAgentId" | "assigneeUserId" => "assignee".into(),
        "projectId" => "project".into(),
        "goalId" => "goal".into(),
        "parentId" => "parent".into(),
        "labelIds" => "labels".into(),
        other => {
            // camelCase to words: `dueDate` → `due date`.
            let mut s = String::new();
            for ch in other.chars() {
                if ch.is_uppercase() {
                    s.push(' ');
                    s.extend(ch.to_lowercase());
                } else {
                    s.push(ch);
                }
            }
            s
        }
    }
}

/// A liveness reason as the tail of a sentence: "Run wrote output but …"
/// reads "wrote output but …".
fn reason_tail(reason: &str) -> String {
    let r = reason.strip_prefix("Run ").unwrap_or(reason);
    let mut chars = r.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The outcome of a run in words. `changed` is what it did on the board
/// (from [`board_changes`]) and the workspace diff summary when known;
/// without them (a list of runs), the recorded liveness verdict speaks.
pub fn outcome(run: &HeartbeatRun, changed: &[String]) -> (Tone, String) {
    let did = changed.join(", ");
    match run.status {
        RunStatus::Queued => return (Tone::Idle, "waiting to start".into()),
        RunStatus::Running => return (Tone::Idle, "working".into()),
        RunStatus::Cancelled => {
            let why = run
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return (Tone::Idle, format!("stopped{why}"));
        }
        RunStatus::Failed | RunStatus::TimedOut => {
            let why = match run.error_code.as_deref() {
                Some(c) => code_words(c),
                None if run.status == RunStatus::TimedOut => code_words("timeout"),
                None => "it ended with an error".into(),
            };
            let after = if did.is_empty() {
                String::new()
            } else {
                format!(" (after it {did})")
            };
            return (Tone::Bad, format!("failed: {why}{after}"));
        }
        RunStatus::Succeeded => {}
    }
    if !did.is_empty() {
        return (Tone::Did, did);
    }
    let reason = run
        .liveness_reason
        .as_deref()
        .map(reason_tail)
        .unwrap_or_default();
    // A verdict with no useful action: the task was already where it is.
    let useful = run.last_useful_action_at.is_some();
    match run.liveness_state {
        Some(Liveness::Advanced) => (Tone::Did, reason),
        Some(Liveness::Completed) if useful => (Tone::Did, format!("finished: {reason}")),
        Some(Liveness::Blocked) if useful => (Tone::Did, reason),
        Some(
            Liveness::Completed
            | Liveness::Blocked
            | Liveness::NeedsFollowup
            | Liveness::EmptyResponse,
        ) => (Tone::Nothing, format!("did nothing: {reason}")),
        Some(Liveness::Failed) => (Tone::Bad, reason),
        None => (Tone::Idle, "finished".into()),
    }
}

/// A run row for unit tests.
#[cfg(test)]
pub(crate) fn tests_run(status: &str) -> HeartbeatRun {
    HeartbeatRun {
        id: "r1".into(),
        company_id: "c".into(),
        agent_id: "a".into(),
        invocation_source: "automation".into(),
        trigger_detail: None,
        status: serde_json::from_value(serde_json::json!(status)).expect("a status"),
        wakeup_request_id: None,
        issue_id: None,
        wake_reason: None,
        context_snapshot: serde_json::json!({}),
        started_at: None,
        finished_at: None,
        error: None,
        error_code: None,
        exit_code: None,
        signal: None,
        usage_json: None,
        result_json: None,
        stdout_excerpt: None,
        stderr_excerpt: None,
        log_store: None,
        log_ref: None,
        log_bytes: 0,
        log_compressed: false,
        log_removed_at: None,
        next_event_seq: 0,
        process_pid: None,
        process_group_id: None,
        process_started_at: None,
        last_output_at: None,
        last_output_seq: None,
        last_output_stream: None,
        last_output_bytes: None,
        liveness_state: None,
        liveness_reason: None,
        last_useful_action_at: None,
        retry_of_run_id: None,
        continuation_attempt: 0,
        coalesced_count: 0,
        session_id_before: None,
        session_id_after: None,
        upstream: Default::default(),
        created_at: "2026-12-02T12:00:00Z".into(),
        updated_at: "2026-12-02T12:00:00Z".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(status: &str) -> HeartbeatRun {
        tests_run(status)
    }

    fn entry(action: &str, run_id: &str, details: serde_json::Value, id: &str) -> ActivityEntry {
        ActivityEntry {
            id: id.into(),
            company_id: "c".into(),
            actor_type: "agent".into(),
            actor_id: "a".into(),
            action: action.into(),
            entity_type: "issue".into(),
            entity_id: "i".into(),
            agent_id: Some("a".into()),
            run_id: Some(run_id.into()),
            responsible_user_id: None,
            details,
            created_at: "2026-12-02T12:00:00Z".into(),
        }
    }

    #[test]
    fn durations_read_as_ran_running_or_queued() {
        let now = parse("2026-12-02T12:00:09.100Z").unwrap();
        let mut r = run("succeeded");
        r.started_at = Some("2026-12-02T12:00:00Z".into());
        r.finished_at = Some("2026-12-02T12:00:09.100Z".into());
        assert_eq!(took(&r, now), "ran 9.1 s");
        r.status = RunStatus::Running;
        r.finished_at = None;
        assert_eq!(took(&r, now), "running for 9 s");
        let q = run("queued");
        assert_eq!(took(&q, now), "queued for 9 s");
        assert_eq!(ticking(185_000), "3 min 5 s");
        assert_eq!(span(850), "850 ms");
        let mut never = run("cancelled");
        never.finished_at = Some("2026-12-02T12:00:01Z".into());
        assert_eq!(took(&never, now), "never started");
    }

    #[test]
    fn a_persons_mention_is_not_an_automation() {
        let mut r = run("running");
        r.wake_reason = Some("issue_comment_mentioned".into());
        r.context_snapshot = json!({ "commentIds": ["c1", "c2"] });
        assert_eq!(wake_comment_id(&r), Some("c2"));
        assert_eq!(
            wake_words(&r, Waker::Person(None)),
            "Woken by a person's @mention"
        );
        assert_eq!(
            wake_words(&r, Waker::Agent("Lead")),
            "Woken by Lead's @mention"
        );
        assert_eq!(
            wake_words(&r, Waker::Unknown),
            "Woken: an @mention in a comment"
        );
        r.wake_reason = None;
        assert_eq!(wake_words(&r, Waker::Unknown), "Woken: an automation");
        r.context_snapshot = json!({ "payload": { "commentId": "c9" } });
        assert_eq!(wake_comment_id(&r), Some("c9"));
    }

    #[test]
    fn what_a_run_changed_on_its_task() {
        let rows = [
            entry(
                "issue.updated",
                "r1",
                json!({ "changes": { "status": { "from": "todo", "to": "in_progress" } } }),
                "1",
            ),
            entry("issue.comment_added", "r1", json!({}), "2"),
            entry(
                "issue.updated",
                "r1",
                json!({ "changes": { "status": { "from": "in_progress", "to": "done" }, "dueDate": {} } }),
                "3",
            ),
            entry("issue.comment_added", "r2", json!({}), "4"),
        ];
        assert_eq!(
            board_changes("r1", &rows),
            vec![
                "moved it to in progress",
                "moved it to done",
                "posted a comment",
                "changed its due date"
            ]
        );
        let mut r = run("succeeded");
        let changed = board_changes("r1", &rows);
        assert_eq!(outcome(&r, &changed).0, Tone::Did);
        // Nothing on the board: the verdict says why, as "did nothing".
        r.liveness_state = Some(Liveness::Completed);
        r.liveness_reason = Some("Its task is done".into());
        assert_eq!(
            outcome(&r, &[]),
            (Tone::Nothing, "did nothing: its task is done".into())
        );
        r.liveness_state = Some(Liveness::NeedsFollowup);
        r.liveness_reason = Some("Run wrote output but changed nothing on the board".into());
        assert_eq!(
            outcome(&r, &[]).1,
            "did nothing: wrote output but changed nothing on the board"
        );
        r.liveness_state = Some(Liveness::Advanced);
        r.last_useful_action_at = Some("t".into());
        r.liveness_reason = Some("Run left 1 document revision on the board".into());
        assert_eq!(
            outcome(&r, &[]),
            (Tone::Did, "left 1 document revision on the board".into())
        );
        let mut f = run("failed");
        f.error_code = Some("nonzero_exit".into());
        assert_eq!(
            outcome(&f, &["posted a comment".into()]).1,
            "failed: the process exited with an error (after it posted a comment)"
        );
    }
}
