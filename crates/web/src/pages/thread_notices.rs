//! The notices of a coding run, as small pills on its card: whether it
//! resumed the agent's CLI session or started a fresh one, whether the CLI
//! compacted its conversation, and whether the run ended on the provider's
//! usage limit. Read from the run and its events; words, not codes.

use maud::{html, Markup};
use paperclip_core::model::{HeartbeatRun, RunEvent};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    FreshSession,
    ResumedSession,
    Compacted,
    UsageLimit,
}

impl Notice {
    pub fn words(self) -> &'static str {
        match self {
            Notice::FreshSession => "Fresh session",
            Notice::ResumedSession => "Resumed session",
            Notice::Compacted => "Compacted",
            Notice::UsageLimit => "Usage limit",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Notice::FreshSession => "fresh",
            Notice::ResumedSession => "resumed",
            Notice::Compacted => "compacted",
            Notice::UsageLimit => "limit",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Notice::FreshSession => "The run started a new CLI session: the agent's earlier conversation on this task was not carried over",
            Notice::ResumedSession => "The run continued the agent's CLI session on this task",
            Notice::Compacted => "The CLI summarised its conversation to fit the model's context window",
            Notice::UsageLimit => "The run ended on the provider's rate or usage limit; the agent's work waits until it lifts",
        }
    }
}

/// Whether an earlier run of the same agent in `runs` (the task's) ended in
/// a CLI session: a run after it without one started afresh (`/new`, a
/// reset session, an overflowed one forgotten).
pub fn had_session(run: &HeartbeatRun, runs: &[HeartbeatRun]) -> bool {
    runs.iter().any(|r| {
        r.agent_id == run.agent_id && r.created_at < run.created_at && r.session_id_after.is_some()
    })
}

/// The notices of `run`, in a fixed order; `had_session`: the agent had a
/// session on this task before the run.
pub fn notices(run: &HeartbeatRun, events: &[&RunEvent], had_session: bool) -> Vec<Notice> {
    let has = |kind: &str| events.iter().any(|e| e.event_type == kind);
    let cli = has("transcript.init");
    let forced = run
        .context_snapshot
        .get("forceFreshSession")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut out = Vec::new();
    // A reset (the saved session was refused, or `/new`) is fresh even
    // though a session was asked for.
    let fresh = cli && run.session_id_before.is_none() && (forced || had_session);
    if has("session.reset") || fresh {
        out.push(Notice::FreshSession);
    } else if run.session_id_before.is_some() && (cli || run.session_id_after.is_some()) {
        out.push(Notice::ResumedSession);
    }
    if has("transcript.compacted") {
        out.push(Notice::Compacted);
    }
    if run.error_code.as_deref() == Some("rate_limited") {
        out.push(Notice::UsageLimit);
    }
    out
}

pub fn chips(run: &HeartbeatRun, events: &[&RunEvent], runs: &[HeartbeatRun]) -> Markup {
    let list = notices(run, events, had_session(run, runs));
    html! {
        @for n in &list {
            " " span class={"notice-chip notice-" (n.class())} data-notice=(n.class()) title=(n.title()) { (n.words()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str) -> RunEvent {
        RunEvent {
            id: kind.into(),
            company_id: "c".into(),
            run_id: "r".into(),
            agent_id: "a".into(),
            seq: 1,
            event_type: kind.into(),
            stream: None,
            level: "info".into(),
            message: None,
            payload: Some(json!({})),
            created_at: "t".into(),
        }
    }

    #[test]
    fn a_run_says_how_its_session_went() {
        let init = event("transcript.init");
        let reset = event("session.reset");
        let compacted = event("transcript.compacted");
        let mut run = crate::pages::thread_words::tests_run("succeeded");
        // A first run: no session before, nothing to say.
        assert_eq!(notices(&run, &[&init], false), vec![]);
        // After a run that had one (then `/new`): fresh.
        let mut before = crate::pages::thread_words::tests_run("succeeded");
        before.created_at = "2026-01-01T00:00:00Z".into();
        run.created_at = "2026-01-02T00:00:00Z".into();
        assert!(!had_session(&run, std::slice::from_ref(&before)));
        before.session_id_after = Some("s0".into());
        assert!(had_session(&run, std::slice::from_ref(&before)));
        assert!(!had_session(&before, &[run.clone(), before.clone()]));
        assert_eq!(notices(&run, &[&init], true), vec![Notice::FreshSession]);
        run.session_id_before = Some("s1".into());
        assert_eq!(notices(&run, &[&init], true), vec![Notice::ResumedSession]);
        assert_eq!(
            notices(&run, &[&reset, &init, &compacted], true),
            vec![Notice::FreshSession, Notice::Compacted]
        );
        run.session_id_before = None;
        run.context_snapshot = json!({ "forceFreshSession": true });
        run.error_code = Some("rate_limited".into());
        assert_eq!(
            notices(&run, &[&init], false),
            vec![Notice::FreshSession, Notice::UsageLimit]
        );
        let html = chips(&run, &[&init], &[]).into_string();
        assert!(
            html.contains(">Fresh session<") && html.contains(">Usage limit<"),
            "{html}"
        );
    }
}
