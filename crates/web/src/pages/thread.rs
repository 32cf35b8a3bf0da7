//! A run in the task thread. Its summary line says who ran, when, for how
//! long and what came of it in words; opened, its steps (a CLI's transcript
//! with tool calls folded) and its output. While the run is live its output
//! streams in: thread.js follows the run's log into `[data-stream-run]` and
//! keeps that element across the page's live re-renders; the transcript of
//! a CLI run comes with each re-render, from the steps its adapter records.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use maud::{html, Markup};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{ActivityEntry, Agent, Comment, HeartbeatRun, RunEvent};
use paperclip_core::workspace::RunWorkspaceChanges;
use paperclip_core::workspace_ops::change_summary;

use super::thread_steps::{final_reply, is_transcript, steps, STEPS_SHOWN};
use super::thread_words::{board_changes, outcome, took, wake_comment_id, wake_words, Waker};
use crate::fmt::{pill, time};

/// How much of a live log the page asks for first: its end.
const LIVE_TAIL: i64 = 64 * 1024;
/// Characters of the final reply on the folded card.
const REPLY_EXCERPT: usize = 280;

/// What the task page loaded once for all its runs.
pub struct Thread<'a> {
    pub names: &'a HashMap<&'a str, &'a Agent>,
    /// People by user id (an authenticated instance).
    pub people: &'a HashMap<String, String>,
    pub comments: &'a [Comment],
    /// The task's activity (what each run changed on it).
    pub activity: &'a [ActivityEntry],
    /// The workspace changes of the task's recent runs.
    pub diffs: &'a [RunWorkspaceChanges],
    pub now: DateTime<Utc>,
    /// Ids the page can name in agent text (`thread_ids`).
    pub ids: &'a super::thread_ids::Known,
    /// The task's runs shown (a fresh session is told from the ones before).
    pub runs: &'a [HeartbeatRun],
}

/// Who wrote the comment the run was woken for, when it is on this task.
pub fn waker<'a>(
    run: &HeartbeatRun,
    comments: &'a [Comment],
    names: &HashMap<&str, &'a Agent>,
    people: &'a HashMap<String, String>,
) -> Waker<'a> {
    let Some(comment) = wake_comment_id(run).and_then(|id| comments.iter().find(|c| c.id == id))
    else {
        return Waker::Unknown;
    };
    match (&comment.author_agent_id, &comment.author_user_id) {
        (Some(a), _) => names
            .get(a.as_str())
            .map(|a| Waker::Agent(a.name.as_str()))
            .unwrap_or(Waker::Unknown),
        (None, user) => Waker::Person(
            user.as_deref()
                .and_then(|u| people.get(u))
                .map(String::as_str),
        ),
    }
}

/// What the run changed, in words: on the task, then in its worktree.
fn changed(run: &HeartbeatRun, t: &Thread) -> Vec<String> {
    let mut out = board_changes(&run.id, t.activity);
    if let Some(d) = t
        .diffs
        .iter()
        .find(|d| d.run_id == run.id && d.files_changed > 0)
    {
        out.push(change_summary(d.files_changed, d.insertions, d.deletions));
    }
    out
}

/// One run of the task: summary, then steps and output.
pub fn run_card(run: &HeartbeatRun, events: &[&RunEvent], t: &Thread) -> Markup {
    let agent = t.names.get(run.agent_id.as_str());
    let name = agent.map(|a| a.name.as_str()).unwrap_or("Agent");
    // Relative: the task page is `/{prefix}/tasks/{identifier}`.
    let key = agent
        .map(|a| a.url_key.as_str())
        .unwrap_or(run.agent_id.as_str());
    let run_page = format!("../agents/{key}/runs/{}", run.id);
    let live = run.status.is_live();
    let transcript = is_transcript(events.iter().copied());
    let (tone, words) = outcome(run, &changed(run, t));
    let why = wake_words(run, waker(run, t.comments, t.names, t.people));
    let reply = final_reply(run, events);
    let started = run.started_at.as_deref();
    html! {
        details.run data-run-id=(run.id) data-run-status=(run.status) data-transcript[transcript] open[live || run.status == RunStatus::Failed] {
            summary {
                span.run-head {
                    (pill(&run.status)) " "
                    strong.run-agent { (name) } " "
                    span.run-when.muted {
                        @match started { Some(s) => { "started " (time(s, t.now)) }, None => { "asked " (time(&run.created_at, t.now)) } }
                        " · "
                        span.run-took
                            data-running-since=[started.filter(|_| run.status == RunStatus::Running)]
                            data-queued-since=[(run.status == RunStatus::Queued).then_some(run.created_at.as_str())] {
                            (took(run, t.now))
                        }
                    }
                    @if live {
                        " " button.small type="button" data-action="POST" data-url={"/api/heartbeat-runs/" (run.id) "/cancel"} data-confirm="Stop this run?" data-done="Stopped" { "Stop" }
                    }
                    @if matches!(run.status, RunStatus::Failed | RunStatus::TimedOut | RunStatus::Cancelled) {
                        " " button.small type="button" data-action="POST" data-url={"/api/agents/" (run.agent_id) "/wakeup"}
                            data-body=(serde_json::json!({ "failedRunId": run.id, "reason": "retry_failed_run" })) data-done="Retry queued" { "Retry" }
                    }
                    (super::thread_notices::chips(run, events, t.runs))
                    " " a.run-page-link href=(run_page) data-run-page { "Run page" }
                }
                span class={"outcome tone-" (tone.class())} data-outcome=(tone.class()) { (words) }
                span.run-why.muted {
                    (why)
                    @if run.continuation_attempt > 0 {
                        " · continues after a restart (" (run.continuation_attempt) " of " (paperclip_store::runs::follow_up::CONTINUATIONS) ")"
                    } @else if run.retry_of_run_id.is_some() { " · a retry" }
                    @if let Some(usage) = run.usage_json.as_ref().and_then(crate::fmt::run_usage) { " · " (usage) }
                }
                @if let Some(r) = reply { span.reply-excerpt { (excerpt(&t.ids.plain(r), REPLY_EXCERPT)) } }
            }
            @if let Some(err) = &run.error {
                @if run.status == RunStatus::Cancelled { p.run-note { "Stopped: " (err) } }
                @else { p.run-error { strong { (run.error_code.as_deref().unwrap_or("error")) ": " } (err) } }
            }
            (steps(run, events, STEPS_SHOWN, &run_page, t.ids))
            (output(run, transcript, live, &run_page))
        }
    }
}

/// The run's output. A process agent's lines stream in while it runs (the
/// box is open then); a CLI's output is its transcript above, so its raw
/// JSON lines stay folded and do not stream.
fn output(run: &HeartbeatRun, transcript: bool, live: bool, run_page: &str) -> Markup {
    let streams = live && !transcript;
    let from = run
        .last_output_bytes
        .unwrap_or(0)
        .saturating_sub(LIVE_TAIL)
        .max(0);
    html! {
        details.raw open[streams] {
            summary { @if transcript { "Raw log (the CLI's JSON lines)" } @else { "Output" } }
            div.stream-box data-stream-run=(run.id) data-live=(if streams { "1" } else { "0" }) data-log-from=(from) data-run-page=(run_page) {
                p.stream-note hidden {}
                pre.stream {
                    @if let Some(out) = &run.stdout_excerpt { (out) }
                    @if let Some(err) = &run.stderr_excerpt { span.log-err { (err) } }
                }
                @if !live && run.stdout_excerpt.is_none() && run.stderr_excerpt.is_none() {
                    p.muted.stream-empty { "The run printed nothing." }
                }
            }
            p.muted { "The end of each stream is kept here; the " a href=(run_page) { "run page" } " has the full log." }
        }
    }
}

/// The reply as one plain line: Markdown's markers are dropped (the card
/// shows text; the opened run renders the Markdown).
fn excerpt(text: &str, max: usize) -> String {
    let flat = text
        .lines()
        .map(|l| {
            l.trim_start()
                .trim_start_matches(['#', '>', '-'])
                .trim_start()
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace("**", "")
        .replace("__", "")
        .replace('`', "");
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// A runs table's Outcome cell: the status and liveness verdict in words
/// (the tables load no activity), with a failure's own message.
pub fn outcome_cell(run: &HeartbeatRun) -> Markup {
    let (tone, words) = outcome(run, &[]);
    let failed = matches!(run.status, RunStatus::Failed | RunStatus::TimedOut);
    html! {
        span class={"outcome tone-" (tone.class())} data-outcome=(tone.class()) { (words) }
        @if let Some(e) = run.error.as_ref().filter(|_| failed) { span.muted.run-error-text { " · " (e) } }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reply_excerpt_is_plain_text() {
        assert_eq!(
            super::excerpt("# Done\n\nWrote the **changelog** and `notes`.", 280),
            "Done Wrote the changelog and notes."
        );
        assert_eq!(super::excerpt("abcdef", 3), "abc…");
    }
}
