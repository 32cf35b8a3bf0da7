//! What an ACP agent says during a turn, in the shapes the CLI adapters
//! report: `session/update` notifications become transcript items (the
//! same `transcript.*` events, so the board shows an ACP run like a CLI
//! run), plans and thoughts become events of their own, and the agent's
//! usage (where it sends any) becomes the run's.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::cli::stream::{Item, Usage};
use crate::config::truncate;
use crate::RunSink;

/// What one tool call has said of itself so far (its first notification
/// may come before its input is known).
#[derive(Default)]
struct ToolCall {
    name: String,
    kind: Option<String>,
    input: Value,
    started: bool,
    finished: bool,
}

/// Turns a turn's `session/update`s into transcript items.
#[derive(Default)]
pub(crate) struct Mapper {
    /// The agent's words since its last other update, sent as one item
    /// when something else happens (they stream in token-sized chunks).
    message: String,
    thought: String,
    tools: HashMap<String, ToolCall>,
    /// The agent's last complete message, for the run's result.
    pub last_message: Option<String>,
    /// Token counts from the agent, when it reports them.
    pub usage: Usage,
    /// The agent's cumulative session cost (`usage_update.cost`), first and
    /// last seen: this run's share is the difference.
    cost_first: Option<f64>,
    cost_last: Option<f64>,
    /// Tokens in the session's context and its window (`usage_update`):
    /// not billed tokens, so never counted as usage.
    pub context: Option<(u64, u64)>,
    /// The model the agent said answered (gemini's `_meta.quota`).
    pub reported_model: Option<String>,
}

pub(crate) enum Extra {
    Plan(Value),
    Thought(String),
}

impl Mapper {
    /// The kind (`read`, `execute`, ...) a tool call declared, for the
    /// permission policy (a permission request may leave it out).
    pub fn tool_kind(&self, id: &str) -> Option<&str> {
        self.tools.get(id).and_then(|t| t.kind.as_deref())
    }

    /// Cost seen before the turn (a loaded session's earlier spend), so
    /// only this run's is counted.
    pub fn cost_baseline(&mut self) {
        self.cost_first = self.cost_last;
    }

    /// One `session/update`'s `update` object; returns the items to emit.
    pub fn update(&mut self, update: &Value) -> (Vec<Item>, Vec<Extra>) {
        let mut items = Vec::new();
        let mut extras = Vec::new();
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("");
        if kind != "agent_message_chunk" {
            self.flush_message(&mut items);
        }
        if kind != "agent_thought_chunk" {
            self.flush_thought(&mut extras);
        }
        match kind {
            "agent_message_chunk" => self.message.push_str(&chunk_text(update)),
            "agent_thought_chunk" => self.thought.push_str(&chunk_text(update)),
            "tool_call" | "tool_call_update" => self.tool(update, &mut items),
            "plan" => extras.push(Extra::Plan(
                update.get("entries").cloned().unwrap_or(json!([])),
            )),
            "usage_update" => {
                let n = |k: &str| update.get(k).and_then(Value::as_u64);
                if let (Some(used), Some(size)) = (n("used"), n("size")) {
                    self.context = Some((used, size));
                }
                if let Some(cost) = update.pointer("/cost/amount").and_then(Value::as_f64) {
                    let usd = update.pointer("/cost/currency").and_then(Value::as_str);
                    if usd.is_none_or(|c| c.eq_ignore_ascii_case("usd")) {
                        self.cost_first.get_or_insert(0.0);
                        self.cost_last = Some(cost);
                    }
                }
            }
            _ => {}
        }
        (items, extras)
    }

    /// The end of the turn: what is still buffered, and the turn's usage
    /// from its `session/prompt` answer where the agent reports one.
    pub fn finish(&mut self, prompt_result: Option<&Value>) -> (Vec<Item>, Vec<Extra>) {
        let mut items = Vec::new();
        let mut extras = Vec::new();
        self.flush_message(&mut items);
        self.flush_thought(&mut extras);
        if let Some(u) = prompt_result
            .and_then(|r| r.get("usage"))
            .filter(|u| u.is_object())
        {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage.input_tokens = n("inputTokens") + n("cachedWriteTokens");
            self.usage.cached_input_tokens = n("cachedReadTokens");
            self.usage.output_tokens = n("outputTokens") + n("thoughtTokens");
        } else if let Some(q) = prompt_result.and_then(|r| r.pointer("/_meta/quota")) {
            // gemini --acp (0.61) reports the turn's tokens outside the
            // protocol's `usage`, in `_meta.quota`, with the model that
            // answered.
            let n = |k: &str| q.pointer(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage.input_tokens = n("/token_count/input_tokens");
            self.usage.output_tokens = n("/token_count/output_tokens");
            if let Some(model) = q
                .pointer("/model_usage/0/model")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
            {
                self.reported_model = Some(model.to_string());
            }
        }
        if let (Some(first), Some(last)) = (self.cost_first, self.cost_last) {
            self.usage.cost_usd = Some((last - first).max(0.0));
        }
        (items, extras)
    }

    fn flush_message(&mut self, items: &mut Vec<Item>) {
        let text = std::mem::take(&mut self.message);
        if !text.trim().is_empty() {
            self.last_message = Some(text.clone());
            items.push(Item::Assistant { text });
        }
    }

    fn flush_thought(&mut self, extras: &mut Vec<Extra>) {
        let text = std::mem::take(&mut self.thought);
        if !text.trim().is_empty() {
            extras.push(Extra::Thought(text));
        }
    }

    fn tool(&mut self, u: &Value, items: &mut Vec<Item>) {
        let Some(id) = u.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        let t = self.tools.entry(id.to_string()).or_default();
        // Claude's bridge names its tools (`Bash`) in `_meta`; others have
        // only a kind and a title.
        if let Some(name) = u
            .pointer("/_meta/claudeCode/toolName")
            .and_then(Value::as_str)
            .or_else(|| {
                u.get("kind")
                    .and_then(Value::as_str)
                    .filter(|_| t.name.is_empty())
            })
        {
            t.name = name.to_string();
        }
        if let Some(kind) = u.get("kind").and_then(Value::as_str) {
            t.kind = Some(kind.to_string());
        }
        match u.get("rawInput") {
            Some(input) if has_content(input) => t.input = input.clone(),
            _ if !has_content(&t.input) => {
                if let Some(title) = u.get("title").and_then(Value::as_str) {
                    t.input = json!({ "title": title });
                }
            }
            _ => {}
        }
        let status = u.get("status").and_then(Value::as_str);
        let done = matches!(status, Some("completed" | "failed"));
        let input_known = u.get("rawInput").is_some_and(has_content);
        if !t.started && (input_known || status.is_some_and(|s| s != "pending")) {
            t.started = true;
            items.push(Item::ToolCall {
                id: id.to_string(),
                name: if t.name.is_empty() {
                    "tool".into()
                } else {
                    t.name.clone()
                },
                input: t.input.clone(),
            });
        }
        if done && t.started && !t.finished {
            t.finished = true;
            items.push(Item::ToolResult {
                id: id.to_string(),
                output: tool_output(u),
                is_error: status == Some("failed"),
            });
        }
    }
}

fn has_content(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Object(o) => !o.is_empty(),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// The text of an `agent_message_chunk` / `agent_thought_chunk`.
fn chunk_text(update: &Value) -> String {
    block_text(update.get("content").unwrap_or(&Value::Null))
}

fn block_text(block: &Value) -> String {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        Some("resource_link") => block
            .get("uri")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

/// A finished tool call's output: its content blocks' text (a diff named by
/// its path), else its raw output.
fn tool_output(u: &Value) -> String {
    let mut out = String::new();
    for c in u
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match c.get("type").and_then(Value::as_str) {
            Some("content") => out.push_str(&block_text(c.get("content").unwrap_or(&Value::Null))),
            Some("diff") => {
                out.push_str("edited ");
                out.push_str(c.get("path").and_then(Value::as_str).unwrap_or("a file"));
            }
            _ => {}
        }
        out.push('\n');
    }
    if out.trim().is_empty() {
        out = match u.get("rawOutput") {
            Some(Value::String(s)) => s.clone(),
            Some(v) if has_content(v) => {
                ["output", "stdout", "formatted_output", "aggregated_output"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
                    .unwrap_or_else(|| v.to_string())
            }
            _ => String::new(),
        };
    }
    out.trim_end().to_string()
}

impl Extra {
    pub fn emit(&self, sink: &dyn RunSink) {
        match self {
            Extra::Plan(entries) => {
                let list = entries.as_array().map(Vec::as_slice).unwrap_or_default();
                let done = list.iter().filter(|e| e["status"] == "completed").count();
                let now = list
                    .iter()
                    .find(|e| e["status"] == "in_progress")
                    .and_then(|e| e["content"].as_str())
                    .unwrap_or("");
                let mut message = format!("plan: {done} of {} steps done", list.len());
                if !now.is_empty() {
                    message.push_str(&format!("; now: {}", truncate(now, 200)));
                }
                sink.event(
                    "transcript.plan",
                    "info",
                    &message,
                    json!({ "entries": entries }),
                );
            }
            Extra::Thought(text) => sink.event(
                "transcript.thought",
                "info",
                truncate(text.trim().lines().next().unwrap_or(""), 300),
                json!({ "text": text }),
            ),
        }
    }
}

/// `permissionMode`, upstream's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    ApproveAll,
    ApproveReads,
    DenyAll,
}

/// `nonInteractivePermissions`: what to do with a request the mode does not
/// approve when no one can be asked (always here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonInteractive {
    Deny,
    Fail,
}

/// How a permission request is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decision {
    pub allowed: bool,
    /// The option chosen; `None` answers `cancelled` (no option fits).
    pub option: Option<String>,
    /// The run fails after answering (`nonInteractivePermissions: fail`).
    pub fail: bool,
}

/// Tool kinds that only look: what `approve-reads` lets through.
const READ_KINDS: &[&str] = &["read", "search", "think"];

pub(crate) fn decide(
    mode: PermissionMode,
    non_interactive: NonInteractive,
    kind: Option<&str>,
    options: &[Value],
) -> Decision {
    let allow = match mode {
        PermissionMode::ApproveAll => true,
        PermissionMode::ApproveReads => kind.is_some_and(|k| READ_KINDS.contains(&k)),
        PermissionMode::DenyAll => false,
    };
    let pick = |kinds: &[&str]| {
        kinds.iter().find_map(|want| {
            options
                .iter()
                .find(|o| o.get("kind").and_then(Value::as_str) == Some(want))
                .and_then(|o| o.get("optionId").and_then(Value::as_str))
                .map(str::to_string)
        })
    };
    if allow {
        if let Some(option) = pick(&["allow_once", "allow_always"]) {
            return Decision {
                allowed: true,
                option: Some(option),
                fail: false,
            };
        }
    }
    Decision {
        allowed: false,
        option: pick(&["reject_once", "reject_always"]),
        // A mode that denies by design (deny-all) is not a failure; a
        // request approve-reads could not approve is, when so configured.
        fail: mode == PermissionMode::ApproveReads && non_interactive == NonInteractive::Fail,
    }
}

/// The answer to `session/request_permission` for `decision`.
pub(crate) fn answer(decision: &Decision) -> Value {
    match &decision.option {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<Value> {
        vec![
            json!({"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"}),
            json!({"kind": "allow_once", "name": "Allow", "optionId": "allow"}),
            json!({"kind": "reject_once", "name": "Reject", "optionId": "reject"}),
        ]
    }

    #[test]
    fn geminis_quota_meta_is_the_turns_usage_and_model() {
        let mut m = Mapper::default();
        m.finish(Some(&json!({"stopReason": "end_turn", "_meta": {"quota": {
            "token_count": {"input_tokens": 120, "output_tokens": 7},
            "model_usage": [{"model": "gemini-2.5-flash",
                "token_count": {"input_tokens": 120, "output_tokens": 7}}]}}})));
        assert_eq!(m.usage.input_tokens, 120);
        assert_eq!(m.usage.output_tokens, 7);
        assert_eq!(m.reported_model.as_deref(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn permissions_follow_the_mode() {
        use NonInteractive::*;
        use PermissionMode::*;
        let o = options();
        let d = decide(ApproveAll, Deny, Some("execute"), &o);
        assert_eq!(
            (d.allowed, d.option.as_deref(), d.fail),
            (true, Some("allow"), false)
        );
        let d = decide(ApproveReads, Deny, Some("read"), &o);
        assert_eq!((d.allowed, d.option.as_deref()), (true, Some("allow")));
        let d = decide(ApproveReads, Deny, Some("execute"), &o);
        assert_eq!(
            (d.allowed, d.option.as_deref(), d.fail),
            (false, Some("reject"), false)
        );
        // Unknown kind: not known to be a read.
        assert!(!decide(ApproveReads, Deny, None, &o).allowed);
        assert!(decide(ApproveReads, Fail, Some("edit"), &o).fail);
        let d = decide(DenyAll, Fail, Some("read"), &o);
        assert_eq!((d.allowed, d.fail), (false, false));
        // No reject option offered: the request is answered "cancelled".
        let d = decide(DenyAll, Deny, None, &o[..2]);
        assert_eq!(answer(&d), json!({"outcome": {"outcome": "cancelled"}}));
        assert_eq!(
            answer(&decide(ApproveAll, Deny, None, &o)),
            json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
        );
    }

    #[test]
    fn a_turn_becomes_transcript_items() {
        let mut m = Mapper::default();
        let mut all = Vec::new();
        let mut extras = 0;
        let updates = [
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Let me "}}),
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "check."}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Checking "}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "out."}}),
            // Announced before its input is known, then filled in.
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Terminal", "kind": "execute",
                   "status": "pending", "rawInput": {}, "_meta": {"claudeCode": {"toolName": "Bash"}}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                   "rawInput": {"command": "curl -X POST $URL/checkout"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "{\"ok\":true}"}}]}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "a", "status": "completed"}]}),
            json!({"sessionUpdate": "usage_update", "used": 100, "size": 1000, "cost": {"amount": 0.5, "currency": "USD"}}),
            json!({"sessionUpdate": "usage_update", "used": 200, "size": 1000, "cost": {"amount": 0.75, "currency": "USD"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
        ];
        for u in &updates {
            let (items, ex) = m.update(u);
            all.extend(items);
            extras += ex.len();
        }
        assert_eq!(m.tool_kind("t1"), Some("execute"));
        let (items, ex) = m.finish(Some(&json!({"stopReason": "end_turn",
            "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "cachedReadTokens": 5}})));
        all.extend(items);
        extras += ex.len();
        assert_eq!(extras, 2, "the thought and the plan");
        assert_eq!(
            all,
            vec![
                Item::Assistant {
                    text: "Checking out.".into()
                },
                Item::ToolCall {
                    id: "t1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "curl -X POST $URL/checkout"})
                },
                Item::ToolResult {
                    id: "t1".into(),
                    output: "{\"ok\":true}".into(),
                    is_error: false
                },
                Item::Assistant {
                    text: "Done.".into()
                },
            ]
        );
        assert_eq!(m.last_message.as_deref(), Some("Done."));
        assert_eq!(
            (
                m.usage.input_tokens,
                m.usage.cached_input_tokens,
                m.usage.output_tokens
            ),
            (20, 5, 10)
        );
        // The session's cost counted from its first report of this run.
        assert_eq!(m.usage.cost_usd, Some(0.75));
    }

    #[test]
    fn a_loaded_sessions_earlier_cost_is_not_this_runs() {
        let mut m = Mapper::default();
        m.update(&json!({"sessionUpdate": "usage_update", "used": 1, "size": 9, "cost": {"amount": 2.0, "currency": "USD"}}));
        m.cost_baseline();
        m.update(&json!({"sessionUpdate": "usage_update", "used": 2, "size": 9, "cost": {"amount": 2.25, "currency": "USD"}}));
        m.finish(None);
        assert_eq!(m.usage.cost_usd, Some(0.25));
        assert_eq!(m.usage.input_tokens, 0, "no tokens invented");
        assert_eq!(m.context, Some((2, 9)));
        let mut quiet = Mapper::default();
        quiet.finish(Some(&json!({"stopReason": "end_turn"})));
        assert!(quiet.usage.is_empty());
    }

    #[test]
    fn a_failed_tool_reports_its_raw_output() {
        let mut m = Mapper::default();
        let (items, _) = m.update(&json!({"sessionUpdate": "tool_call", "toolCallId": "x", "title": "ls", "kind": "execute",
            "status": "in_progress"}));
        assert_eq!(items.len(), 1);
        let (items, _) = m.update(
            &json!({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "failed",
            "rawOutput": {"stdout": "denied"}}),
        );
        assert_eq!(
            items,
            vec![Item::ToolResult {
                id: "x".into(),
                output: "denied".into(),
                is_error: true
            }]
        );
    }
}
