//! What the coding CLIs print, reduced to one shape: transcript items the UI
//! shows as the run goes, and a summary (session, usage, result) read once
//! the process has exited. Each CLI has its own [`StreamParser`].

use serde_json::{json, Value};

use crate::config::truncate;
use crate::RunSink;

/// One step of an agent's transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// The CLI started a session.
    Init {
        session_id: Option<String>,
        model: Option<String>,
        tools: Vec<String>,
    },
    /// Text the model wrote.
    Assistant { text: String },
    /// The model called a tool (`Bash`, `shell`, an edit, ...).
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    /// What the tool gave back.
    ToolResult {
        id: String,
        output: String,
        is_error: bool,
    },
    /// An error the CLI reported inside its stream.
    Error { message: String },
    /// The CLI compacted its conversation to fit its context window
    /// (`trigger`: `auto` or `manual`).
    Compacted {
        trigger: Option<String>,
        pre_tokens: Option<u64>,
        /// What the session holds after it, when the CLI says.
        post_tokens: Option<u64>,
    },
    /// A subagent's step: `item` happened inside the tool call `parent`
    /// (Claude Code's `Task`); the page nests it under that call.
    Nested { parent: String, item: Box<Item> },
}

/// Largest tool output kept in a timeline event; the run log has all of it.
const TOOL_OUTPUT_BYTES: usize = 8 * 1024;

impl Item {
    /// Reports the item as a run event (`transcript.*`).
    pub fn emit(&self, sink: &dyn RunSink) {
        let (kind, level, message, payload) = self.event();
        sink.event(kind, level, &message, payload);
    }

    fn event(&self) -> (&'static str, &'static str, String, Value) {
        match self {
            Item::Init {
                session_id,
                model,
                tools,
            } => (
                "transcript.init",
                "info",
                format!(
                    "session {} on {}",
                    session_id.as_deref().unwrap_or("(new)"),
                    model.as_deref().unwrap_or("the default model")
                ),
                json!({"sessionId": session_id, "model": model, "tools": tools}),
            ),
            Item::Assistant { text } => (
                "transcript.assistant",
                "info",
                first_line(text, 300).to_string(),
                json!({ "text": text }),
            ),
            Item::ToolCall { id, name, input } => (
                "transcript.tool_call",
                "info",
                format!("{name}: {}", describe_input(input)),
                json!({"id": id, "name": name, "input": input}),
            ),
            Item::ToolResult {
                id,
                output,
                is_error,
            } => (
                "transcript.tool_result",
                if *is_error { "warn" } else { "info" },
                first_line(output, 300).to_string(),
                json!({
                    "id": id,
                    "output": truncate(output, TOOL_OUTPUT_BYTES),
                    "truncated": output.len() > TOOL_OUTPUT_BYTES,
                    "isError": is_error,
                }),
            ),
            Item::Error { message } => (
                "transcript.error",
                "error",
                first_line(message, 500).to_string(),
                json!({ "message": message }),
            ),
            Item::Compacted {
                trigger,
                pre_tokens,
                post_tokens,
            } => (
                "transcript.compacted",
                "info",
                compacted_line(*pre_tokens, *post_tokens),
                json!({ "trigger": trigger, "preTokens": pre_tokens, "postTokens": post_tokens }),
            ),
            Item::Nested { parent, item } => {
                let (kind, level, message, mut payload) = item.event();
                if let Value::Object(map) = &mut payload {
                    map.insert("parentToolUseId".into(), Value::String(parent.clone()));
                }
                (kind, level, message, payload)
            }
        }
    }
}

/// "Context compacted · 124k → 18k tokens", as much of it as is known.
fn compacted_line(pre: Option<u64>, post: Option<u64>) -> String {
    use paperclip_core::context::short_tokens;
    match (pre, post) {
        (Some(a), Some(b)) => format!(
            "Context compacted · {} → {} tokens",
            short_tokens(a),
            short_tokens(b)
        ),
        (Some(a), None) => format!("Context compacted · {} tokens before", short_tokens(a)),
        _ => "Context compacted".to_string(),
    }
}

/// A short human line for a tool input: the command when there is one.
fn describe_input(input: &Value) -> String {
    let text = [
        "command",
        "cmd",
        "file_path",
        "path",
        "pattern",
        "url",
        "query",
    ]
    .iter()
    .find_map(|k| match input.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    })
    .unwrap_or_else(|| input.to_string());
    first_line(&text, 200).to_string()
}

fn first_line(text: &str, max: usize) -> &str {
    let line = text.trim().lines().next().unwrap_or("");
    truncate(line, max)
}

/// Token counts as the CLIs report them; cost in USD when the CLI prices it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

impl Usage {
    pub fn is_empty(&self) -> bool {
        self.input_tokens == 0
            && self.cached_input_tokens == 0
            && self.output_tokens == 0
            && self.cost_usd.is_none()
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// Everything a run's output said, once it is over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub session_id: Option<String>,
    pub model: Option<String>,
    pub usage: Usage,
    /// The final answer, when the CLI reports one.
    pub result_text: Option<String>,
    pub stop_reason: Option<String>,
    pub num_turns: Option<u64>,
    /// The CLI reported the turn finished (a `result` / `turn.completed` line).
    pub completed: bool,
    /// The CLI reported the turn as failed, with this message.
    pub error: Option<String>,
    pub json_lines: usize,
    /// The last stdout line that was not JSON, for parse-error messages.
    pub last_other_line: Option<String>,
    /// What the session's context held after the last model request (or
    /// after a compaction), when the CLI reports it.
    pub context_tokens: Option<u64>,
    /// The provider's usage windows as the CLI last reported them, one per
    /// label (the latest report of a window wins).
    pub quota: Vec<paperclip_core::context::QuotaWindow>,
}

impl Summary {
    /// Keeps the latest report of each window.
    pub fn report_window(&mut self, window: paperclip_core::context::QuotaWindow) {
        match self.quota.iter_mut().find(|w| w.label == window.label) {
            Some(old) => *old = window,
            None => self.quota.push(window),
        }
    }
}

/// Seconds since the epoch as RFC 3339 (how the original's windows say when
/// they reset).
pub(crate) fn epoch_rfc3339(secs: i64) -> Option<String> {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

pub trait StreamParser: Send {
    /// One complete stdout line (without its newline); returns the
    /// transcript items it contained.
    fn line(&mut self, line: &str) -> Vec<Item>;
    fn summary(&self) -> Summary;
    /// The model and the run's cumulative usage as of the last line, read
    /// after every line (so without copying the whole summary).
    fn running(&self) -> (Option<&str>, &Usage);
    /// Whether the CLI printed its end (its totals, its last step).
    fn finished(&self) -> bool;
}

/// Parses `line` as a JSON object, or notes it as other output.
pub(crate) fn json_line(line: &str, summary: &mut Summary) -> Option<Value> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(v @ Value::Object(_)) => {
            summary.json_lines += 1;
            Some(v)
        }
        _ => {
            summary.last_other_line = Some(truncate(trimmed, 500).to_string());
            None
        }
    }
}

pub(crate) fn str_at(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v;
    for key in path {
        cur = cur.get(*key)?;
    }
    cur.as_str().map(str::to_string)
}

pub(crate) fn u64_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for key in path {
        match cur.get(*key) {
            Some(next) => cur = next,
            None => return 0,
        }
    }
    cur.as_u64().unwrap_or(0)
}

/// Cuts text into complete lines; a trailing partial line waits for the rest.
#[derive(Default)]
pub(crate) struct Lines {
    pending: String,
}

impl Lines {
    pub fn push(&mut self, text: &str) -> Vec<String> {
        self.pending.push_str(text);
        let Some(end) = self.pending.rfind('\n') else {
            return Vec::new();
        };
        let rest = self.pending.split_off(end + 1);
        let done = std::mem::replace(&mut self.pending, rest);
        done.lines().map(str::to_string).collect()
    }

    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.trim().is_empty()).then_some(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wait_for_their_newline() {
        let mut l = Lines::default();
        assert!(l.push("{\"a\":").is_empty());
        assert_eq!(l.push("1}\n{\"b\""), vec!["{\"a\":1}".to_string()]);
        assert_eq!(
            l.push(":2}\n\n"),
            vec!["{\"b\":2}".to_string(), String::new()]
        );
        assert_eq!(l.finish(), None);
        l.push("tail");
        assert_eq!(l.finish().as_deref(), Some("tail"));
    }

    #[test]
    fn usage_cost_stays_unpriced_until_something_is_priced() {
        let mut u = Usage::default();
        u.add(&Usage {
            input_tokens: 3,
            ..Usage::default()
        });
        assert_eq!(u.cost_usd, None);
        u.add(&Usage {
            cost_usd: Some(0.5),
            ..Usage::default()
        });
        assert_eq!(u.cost_usd, Some(0.5));
        assert_eq!(u.input_tokens, 3);
    }

    #[test]
    fn a_subagents_step_carries_its_parent_call() {
        let call = Item::ToolCall {
            id: "t2".into(),
            name: "Read".into(),
            input: json!({}),
        };
        let (kind, _, _, payload) = Item::Nested {
            parent: "task1".into(),
            item: Box::new(call),
        }
        .event();
        assert_eq!(kind, "transcript.tool_call");
        assert_eq!(payload["parentToolUseId"], "task1");
        assert_eq!(payload["id"], "t2");
    }

    #[test]
    fn tool_inputs_are_described_by_their_command() {
        assert_eq!(
            describe_input(&json!({"command": "ls -la\nmore"})),
            "ls -la"
        );
        assert_eq!(
            describe_input(&json!({"command": ["bash", "-lc", "pwd"]})),
            "bash -lc pwd"
        );
        assert_eq!(describe_input(&json!({"x": 1})), "{\"x\":1}");
    }
}
