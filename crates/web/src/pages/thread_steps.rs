//! A run's steps as a transcript. The coding CLIs' streams are reduced by
//! their adapters to one shape (`transcript.*` run events, redacted, in
//! order), so every CLI reads the same here: what the model wrote as text,
//! each tool call folded to one line (its name and short argument) that
//! opens to its input and output, and the final reply set apart.

use std::collections::{HashMap, HashSet};

use maud::{html, Markup};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{HeartbeatRun, RunEvent};
use paperclip_core::tool_grammar::{describe, error_line};

use super::thread_ids::Known;
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

/// The tool call a subagent's step happened in (Claude Code's `Task`).
fn parent(e: &RunEvent) -> Option<&str> {
    e.payload
        .as_ref()
        .and_then(|p| p.get("parentToolUseId"))
        .and_then(|v| v.as_str())
}

/// The run's final reply: its last assistant text after its last tool
/// call, once it has finished. A subagent's text is not the run's reply.
fn final_event<'a>(run: &HeartbeatRun, events: &[&'a RunEvent]) -> Option<&'a RunEvent> {
    if run.status.is_live() {
        return None;
    }
    let last = events
        .iter()
        .rev()
        .filter(|e| parent(e).is_none())
        .find(|e| {
            e.event_type == "transcript.assistant" || e.event_type == "transcript.tool_call"
        })?;
    (last.event_type == "transcript.assistant" && !text(last, "text").trim().is_empty())
        .then_some(*last)
}

pub fn final_reply<'a>(run: &HeartbeatRun, events: &[&'a RunEvent]) -> Option<&'a str> {
    final_event(run, events).map(|e| text(e, "text"))
}

/// What a run's steps are read with: each call's result, and the steps of
/// the subagent a call started.
struct Calls<'a> {
    results: HashMap<&'a str, &'a RunEvent>,
    children: HashMap<&'a str, Vec<&'a RunEvent>>,
    live: bool,
}

/// Subagents inside subagents are shown this deep; the run page's raw log
/// has the rest.
const NESTING: usize = 4;

/// The steps of `run` (its events in order), the last `limit`, with a link
/// to the run page for the earlier ones. Ids in what the agent wrote are
/// named from `ids`.
pub fn steps(
    run: &HeartbeatRun,
    events: &[&RunEvent],
    limit: usize,
    run_page: &str,
    ids: &Known,
) -> Markup {
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
    let called: HashSet<&str> = all
        .iter()
        .filter(|e| e.event_type == "transcript.tool_call")
        .map(|e| text(e, "id"))
        .collect();
    // A subagent's step goes under its call; one whose call is not in the
    // run stays in line.
    let mut children: HashMap<&str, Vec<&RunEvent>> = HashMap::new();
    let mut top: Vec<&RunEvent> = Vec::with_capacity(all.len());
    for e in &all {
        match parent(e).filter(|p| called.contains(p)) {
            Some(p) => children.entry(p).or_default().push(e),
            None => top.push(e),
        }
    }
    let calls = Calls {
        results,
        children,
        live: run.status.is_live(),
    };
    let reply = final_event(run, &all).map(|e| e.id.as_str());
    let skipped = top.len().saturating_sub(limit);
    html! {
        ol.steps {
            @if skipped > 0 {
                li.muted.steps-earlier { (skipped) " earlier steps are on the " a href=(run_page) { "run page" } "." }
            }
            @for e in &top[skipped..] {
                @if e.event_type == "transcript.assistant" && reply == Some(e.id.as_str()) {
                    li.step.final-reply {
                        span.who { "Final reply" }
                        div.said { (markdown::render(&ids.markdown(text(e, "text")))) }
                    }
                }
                @else { (one_step(run, e, &calls, &called, ids, 0)) }
            }
            @if all.is_empty() { li.muted { @if calls.live { "Waiting for the agent's first step…" } @else { "No steps recorded." } } }
        }
    }
}

/// A step of the run or of a subagent: a folded tool call, or a line.
fn one_step(
    run: &HeartbeatRun,
    e: &RunEvent,
    calls: &Calls,
    called: &HashSet<&str>,
    ids: &Known,
    depth: usize,
) -> Markup {
    html! {
        // A result is shown inside its call.
        @if e.event_type == "transcript.tool_result" && called.contains(text(e, "id")) {}
        @else if e.event_type == "transcript.tool_call" {
            li class={"step transcript-tool_call lvl-" (e.level)} {
                (tool_call(run, e, calls, called, ids, depth))
            }
        }
        @else if e.event_type == "transcript.assistant" {
            li class={"step transcript-assistant lvl-" (e.level)} {
                span.who { "said" } div.said { (markdown::render(&ids.markdown(text(e, "text")))) }
            }
        }
        @else {
            li class={"step " (e.event_type.replace('.', "-")) " lvl-" (step_level(run, e))} { (step(e)) }
        }
    }
}

/// One tool call, folded to a line of verb and object (`Ran curl -sS …
/// ✓`), opening to its input, what it gave back and, for a subagent, its
/// own steps.
fn tool_call(
    run: &HeartbeatRun,
    call: &RunEvent,
    calls: &Calls,
    called: &HashSet<&str>,
    ids: &Known,
    depth: usize,
) -> Markup {
    let name = text(call, "name");
    let input_value = call.payload.as_ref().and_then(|p| p.get("input"));
    let line = describe(name, input_value.unwrap_or(&serde_json::Value::Null));
    let input = input_value
        .map(|i| serde_json::to_string_pretty(i).unwrap_or_default())
        .unwrap_or_default();
    let id = text(call, "id");
    let result = calls.results.get(id).copied();
    let failed = result.is_some_and(|r| {
        r.payload
            .as_ref()
            .and_then(|p| p.get("isError"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    });
    let sub = calls.children.get(id).filter(|_| !id.is_empty());
    html! {
        details.tool data-tool=(name) data-verb=(line.verb) data-subagent[sub.is_some()] {
            summary {
                span.tool-verb { (line.verb) }
                @if let Some(o) = &line.object { " " code.tool-arg { (o) } }
                @if let Some(p) = &line.place { " " span.tool-place { (p) } }
                @if let Some((added, removed)) = line.lines { " " span.tool-lines.muted { "+" (added) " −" (removed) } }
                " "
                @match (result, failed) {
                    (Some(r), true) => span.tool-state.failed title="failed" { "✗ " span.tool-error { (error_line(text(r, "output"))) } },
                    (Some(_), false) => span.tool-state.done title="done" { "✓" },
                    (None, _) if calls.live => span.tool-state.running { "running…" },
                    (None, _) => span.tool-state.muted { "no result" },
                }
            }
            div.tool-io {
                @if let Some(steps) = sub.filter(|_| depth < NESTING) {
                    ol.steps.substeps {
                        @for e in steps.iter() { (one_step(run, e, calls, called, ids, depth + 1)) }
                    }
                }
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
        "transcript.compacted" => super::task_context::compaction_divider(e),
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
        let html = steps(&run, &refs, STEPS_SHOWN, "/run", &Known::default()).into_string();
        assert!(
            html.contains(
                "<span class=\"tool-verb\">Ran</span> <code class=\"tool-arg\">curl -sS x</code>"
            ),
            "{html}"
        );
        assert!(html.contains("title=\"done\">✓"), "{html}");
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

    #[test]
    fn a_subagents_steps_nest_under_its_call_and_failures_say_why() {
        let sub = |mut p: serde_json::Value| {
            p["parentToolUseId"] = json!("task1");
            p
        };
        let events = [
            event(
                1,
                "transcript.tool_call",
                "Task",
                json!({ "id": "task1", "name": "Task", "input": { "description": "Find the bug", "subagent_type": "Explore" } }),
            ),
            event(
                2,
                "transcript.tool_call",
                "Read",
                sub(json!({ "id": "t2", "name": "Read", "input": { "file_path": "src/a.rs" } })),
            ),
            event(
                3,
                "transcript.tool_result",
                "no such file",
                sub(json!({ "id": "t2", "output": "File does not exist.\nmore", "isError": true })),
            ),
            event(
                4,
                "transcript.assistant",
                "found",
                sub(json!({ "text": "The bug is in b.rs" })),
            ),
            event(
                5,
                "transcript.tool_result",
                "ok",
                json!({ "id": "task1", "output": "The bug is in b.rs", "isError": false }),
            ),
            event(
                6,
                "transcript.assistant",
                "Fixed",
                json!({ "text": "Fixed it." }),
            ),
        ];
        let refs: Vec<&RunEvent> = events.iter().collect();
        let run = crate::pages::thread_words::tests_run("succeeded");
        // The subagent's words are not the run's reply.
        assert_eq!(final_reply(&run, &refs), Some("Fixed it."));
        let html = steps(&run, &refs, STEPS_SHOWN, "/run", &Known::default()).into_string();
        let (head, nested) = html.split_once("substeps").expect("nested steps");
        assert!(
            head.contains("data-verb=\"Delegated\"") && head.contains("to Explore: Find the bug"),
            "{html}"
        );
        assert!(
            nested.contains("<span class=\"tool-verb\">Read</span>"),
            "{html}"
        );
        assert!(
            nested.contains("✗ <span class=\"tool-error\">File does not exist. …</span>"),
            "{html}"
        );
        assert!(nested.contains("The bug is in b.rs"), "{html}");
        // Top level: the call and the reply; the rest is inside the call.
        assert_eq!(html.matches("<li").count(), 4, "{html}");
        let last_li = html.rfind("<li").unwrap();
        assert!(html[last_li..].contains("final-reply"), "{html}");
    }
}
