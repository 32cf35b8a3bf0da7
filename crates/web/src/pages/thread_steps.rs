//! A run's steps as a transcript. The coding CLIs' streams are reduced by
//! their adapters to one shape (`transcript.*` run events, redacted, in
//! order), so every CLI reads the same here: what the model wrote as text,
//! each tool call folded to one line (its name and short argument) that
//! opens to its input and output, and the final reply set apart.

use std::collections::HashMap;

use maud::{html, Markup};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{HeartbeatRun, RunEvent};

use crate::markdown;

/// Steps a run card shows; the run page has the rest.
pub const STEPS_SHOWN: usize = 200;
/// A tool input shown in full up to here.
const INPUT_BYTES: usize = 4 * 1024;

/// The lifecycle record of a stopped run says `error` (every unsuccessful end
/// does, in the store); on the page a stop is not an error.
pub(crate) fn step_level<'a>(run: &HeartbeatRun, e: &'a RunEvent) -> &'a str {
    if run.status == RunStatus::Cancelled && e.event_type == "lifecycle" && e.level == "error" {
        "info"
    } else {
        &e.level
    }
}

pub(crate) fn is_step(kind: &str) -> bool {
    kind.starts_with("transcript.")
        || matches!(
            kind,
            "adapter.invoke" | "adapter.signal" | "session.reset" | "lifecycle"
        )
}

fn text<'a>(e: &'a RunEvent, key: &str) -> &'a str {
    e.payload
        .as_ref()
        .and_then(|p| p.get(key))
        .and_then(|v| v.as_str())
        .unwrap_or("")
}

/// Whether the run's output is a CLI transcript (its steps say so).
pub fn is_transcript<'a>(events: impl IntoIterator<Item = &'a RunEvent>) -> bool {
    events
        .into_iter()
        .any(|e| e.event_type.starts_with("transcript."))
}

/// The run's final reply: its last assistant text after its last tool
/// call, once it has finished.
fn final_event<'a>(run: &HeartbeatRun, events: &[&'a RunEvent]) -> Option<&'a RunEvent> {
    if run.status.is_live() {
        return None;
    }
    let last = events.iter().rev().find(|e| {
        e.event_type == "transcript.assistant" || e.event_type == "transcript.tool_call"
    })?;
    (last.event_type == "transcript.assistant" && !text(last, "text").trim().is_empty())
        .then_some(*last)
}

pub fn final_reply<'a>(run: &HeartbeatRun, events: &[&'a RunEvent]) -> Option<&'a str> {
    final_event(run, events).map(|e| text(e, "text"))
}

/// The steps of `run` (its events in order), the last `limit`, with a link
/// to the run page for the earlier ones.
pub fn steps(run: &HeartbeatRun, events: &[&RunEvent], limit: usize, run_page: &str) -> Markup {
    let all: Vec<&RunEvent> = events
        .iter()
        .copied()
        .filter(|e| is_step(&e.event_type))
        .collect();
    let results: HashMap<&str, &RunEvent> = all
        .iter()
        .filter(|e| e.event_type == "transcript.tool_result")
        .map(|e| (text(e, "id"), *e))
        .filter(|(id, _)| !id.is_empty())
        .collect();
    let called: std::collections::HashSet<&str> = all
        .iter()
        .filter(|e| e.event_type == "transcript.tool_call")
        .map(|e| text(e, "id"))
        .collect();
    let reply = final_event(run, &all).map(|e| e.id.as_str());
    let skipped = all.len().saturating_sub(limit);
    let live = run.status.is_live();
    html! {
        ol.steps {
            @if skipped > 0 {
                li.muted.steps-earlier { (skipped) " earlier steps are on the " a href=(run_page) { "run page" } "." }
            }
            @for e in &all[skipped..] {
                // A result is shown inside its call.
                @if e.event_type == "transcript.tool_result" && called.contains(text(e, "id")) {}
                @else if e.event_type == "transcript.assistant" && reply == Some(e.id.as_str()) {
                    li.step.final-reply {
                        span.who { "Final reply" }
                        div.said { (markdown::render(text(e, "text"))) }
                    }
                }
                @else if e.event_type == "transcript.tool_call" {
                    li class={"step transcript-tool_call lvl-" (e.level)} {
                        (tool_call(e, results.get(text(e, "id")).copied(), live))
                    }
                }
                @else {
                    li class={"step " (e.event_type.replace('.', "-")) " lvl-" (step_level(run, e))} { (step(e)) }
                }
            }
            @if all.is_empty() { li.muted { @if live { "Waiting for the agent's first step…" } @else { "No steps recorded." } } }
        }
    }
}

/// One tool call, folded: `Bash  curl -sS …  ✓`, opening to its input and
/// what it gave back.
fn tool_call(call: &RunEvent, result: Option<&RunEvent>, live: bool) -> Markup {
    let name = text(call, "name");
    let message = call.message.as_deref().unwrap_or("");
    let arg = message
        .strip_prefix(name)
        .and_then(|m| m.strip_prefix(": "))
        .unwrap_or(message);
    let input = call
        .payload
        .as_ref()
        .and_then(|p| p.get("input"))
        .map(|i| serde_json::to_string_pretty(i).unwrap_or_default())
        .unwrap_or_default();
    let failed = result.is_some_and(|r| {
        r.payload
            .as_ref()
            .and_then(|p| p.get("isError"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    });
    html! {
        details.tool data-tool=(name) {
            summary {
                span.tool-name { (name) }
                " " code.tool-arg { (arg) }
                " "
                @match (result, failed) {
                    (Some(_), true) => span.tool-state.failed { "failed" },
                    (Some(_), false) => span.tool-state.done { "done" },
                    (None, _) if live => span.tool-state.running { "running…" },
                    (None, _) => span.tool-state.muted { "no result" },
                }
            }
            div.tool-io {
                h5 { "Input" }
                pre { (clip(&input, INPUT_BYTES)) }
                @if let Some(r) = result {
                    h5 { @if failed { "Output (an error)" } @else { "Output" } }
                    pre { (text(r, "output")) }
                    @if r.payload.as_ref().and_then(|p| p.get("truncated")).and_then(|v| v.as_bool()).unwrap_or(false) {
                        p.muted { "The output is cut here; the run's log has all of it." }
                    }
                }
            }
        }
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}\n… ({} more bytes)", &s[..cut], s.len() - cut)
}

/// One step that is not a tool call: a line of the timeline.
pub(crate) fn step(e: &RunEvent) -> Markup {
    let message = e.message.as_deref().unwrap_or("");
    match e.event_type.as_str() {
        "transcript.assistant" => {
            html! { span.who { "said" } div.said { (markdown::render(text(e, "text"))) } }
        }
        "transcript.tool_call" => {
            html! { span.who { "ran " (text(e, "name")) } code.cmd { (message) } }
        }
        "transcript.tool_result" => {
            let failed = e
                .payload
                .as_ref()
                .and_then(|p| p.get("isError"))
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            html! {
                span.who { @if failed { "tool failed" } @else { "result" } }
                details.output { summary { (if message.is_empty() { "(no output)" } else { message }) } pre { (text(e, "output")) } }
            }
        }
        "transcript.error" => html! { span.who.error-text { "error" } " " (message) },
        "lifecycle" => html! { span.muted { (message) } },
        "adapter.invoke" => {
            html! { span.who { "started" } " " code.cmd { (message.trim_start_matches("started ")) } }
        }
        "session.reset" => html! { span.who.warn-text { "fresh session" } " " (message) },
        "transcript.init" => html! { span.who { "started" } " " span.muted { (message) } },
        _ => html! { span.who.muted { (e.event_type) } " " span.muted { (message) } },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(seq: i64, kind: &str, message: &str, payload: serde_json::Value) -> RunEvent {
        RunEvent {
            id: format!("e{seq}"),
            company_id: "c".into(),
            run_id: "r".into(),
            agent_id: "a".into(),
            seq,
            event_type: kind.into(),
            stream: None,
            level: "info".into(),
            message: Some(message.into()),
            payload: Some(payload),
            created_at: "t".into(),
        }
    }

    #[test]
    fn a_transcript_folds_tool_calls_and_sets_the_final_reply_apart() {
        let events = [
            event(
                1,
                "transcript.assistant",
                "Looking",
                json!({ "text": "Looking at the task" }),
            ),
            event(
                2,
                "transcript.tool_call",
                "Bash: curl -sS x",
                json!({ "id": "t1", "name": "Bash", "input": { "command": "curl -sS x" } }),
            ),
            event(
                3,
                "transcript.tool_result",
                "ok",
                json!({ "id": "t1", "output": "{\"ok\":true}", "isError": false }),
            ),
            event(
                4,
                "transcript.assistant",
                "Done",
                json!({ "text": "All **done**." }),
            ),
        ];
        let refs: Vec<&RunEvent> = events.iter().collect();
        let run = crate::pages::thread_words::tests_run("succeeded");
        assert_eq!(final_reply(&run, &refs), Some("All **done**."));
        let html = steps(&run, &refs, STEPS_SHOWN, "/run").into_string();
        assert!(
            html.contains("<span class=\"tool-name\">Bash</span>"),
            "{html}"
        );
        assert!(
            html.contains("<code class=\"tool-arg\">curl -sS x</code>"),
            "{html}"
        );
        // The result is inside its call, not a step of its own.
        assert_eq!(html.matches("<li").count(), 3, "{html}");
        assert!(
            html.contains("final-reply") && html.contains("<strong>done</strong>"),
            "{html}"
        );
        // While it runs there is no final reply yet.
        let live = crate::pages::thread_words::tests_run("running");
        assert_eq!(final_reply(&live, &refs), None);
    }
}
