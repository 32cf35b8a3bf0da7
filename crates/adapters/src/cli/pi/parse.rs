//! Pi's JSON event stream (`--mode json`): `message_end` gives the
//! transcript's text and tool calls, `tool_execution_end` the tools'
//! results, `turn_end` each model request's usage and price, `agent_end`
//! the end. Pi exits 0 whatever happened, so a failure is read from the
//! stream: an assistant message that stopped with `error`, retries given up
//! (`auto_retry_end` without success) or an `error` event.

use serde_json::Value;

use crate::cli::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};

#[derive(Default)]
pub struct PiParser {
    summary: Summary,
    /// Pi is retrying a failed request: the failure so far is not the end.
    retrying: bool,
}

/// The words for a model that cannot call tools, with what the server said.
pub(crate) fn tools_unsupported(model: &str, said: &str) -> String {
    format!(
        "The model {model} cannot call tools, which an agent needs to work a task. \
         Pick a larger model or one tuned for tool use. (The model server said: {said})"
    )
}

/// The model a "does not support tools" refusal names, e.g. `gemma:2b` of
/// Ollama's `registry.ollama.ai/library/gemma:2b does not support tools`.
fn refused_model(said: &str) -> Option<String> {
    let lower = said.to_ascii_lowercase();
    let at = lower.find(" does not support tools")?;
    let name = said[..at].split_whitespace().last()?;
    let name = name.trim_matches(|c: char| c == '"' || c == '\'' || c == '`');
    let name = name
        .strip_prefix("registry.ollama.ai/library/")
        .unwrap_or(name);
    (!name.is_empty()).then(|| name.to_string())
}

impl PiParser {
    fn fail(&mut self, said: String, model: Option<String>) -> Vec<Item> {
        let message = match refused_model(&said)
            .or(model.filter(|_| said.contains("does not support tools")))
        {
            Some(m) => tools_unsupported(&m, &said),
            None => said,
        };
        self.summary.error = Some(message.clone());
        vec![Item::Error { message }]
    }

    fn assistant(&mut self, message: &Value) -> Vec<Item> {
        if let (Some(p), Some(m)) = (str_at(message, &["provider"]), str_at(message, &["model"])) {
            self.summary.model = Some(format!("{p}/{m}"));
        }
        if str_at(message, &["stopReason"]).as_deref() == Some("error") {
            let said = str_at(message, &["errorMessage"])
                .unwrap_or_else(|| "the model request failed".into());
            return self.fail(said, str_at(message, &["model"]));
        }
        let Some(blocks) = message.get("content").and_then(Value::as_array) else {
            return Vec::new();
        };
        let mut items = Vec::new();
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    if let Some(text) = str_at(b, &["text"]).filter(|t| !t.trim().is_empty()) {
                        self.summary.result_text = Some(text.clone());
                        items.push(Item::Assistant { text });
                    }
                }
                Some("toolCall") => items.push(Item::ToolCall {
                    id: str_at(b, &["id"]).unwrap_or_default(),
                    name: str_at(b, &["name"]).unwrap_or_default(),
                    input: b.get("arguments").cloned().unwrap_or(Value::Null),
                }),
                _ => {}
            }
        }
        items
    }
}

fn result_text(result: Option<&Value>) -> String {
    match result.and_then(|r| r.get("content")) {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Value::String(s)) => s.clone(),
        _ => result.map(Value::to_string).unwrap_or_default(),
    }
}

impl StreamParser for PiParser {
    fn line(&mut self, line: &str) -> Vec<Item> {
        let Some(v) = json_line(line, &mut self.summary) else {
            return Vec::new();
        };
        let message = v.get("message").cloned().unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_end" if str_at(&message, &["role"]).as_deref() == Some("assistant") => {
                self.assistant(&message)
            }
            "tool_execution_end" => vec![Item::ToolResult {
                id: str_at(&v, &["toolCallId"]).unwrap_or_default(),
                output: result_text(v.get("result")),
                is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
            }],
            "turn_end" => {
                let u = message.get("usage").cloned().unwrap_or(Value::Null);
                self.summary.usage.add(&Usage {
                    input_tokens: u64_at(&u, &["input"]) + u64_at(&u, &["cacheWrite"]),
                    cached_input_tokens: u64_at(&u, &["cacheRead"]),
                    output_tokens: u64_at(&u, &["output"]),
                    cost_usd: u.pointer("/cost/total").and_then(Value::as_f64),
                });
                self.summary.num_turns = Some(self.summary.num_turns.unwrap_or(0) + 1);
                self.summary.stop_reason = str_at(&message, &["stopReason"]);
                Vec::new()
            }
            "agent_end" => {
                self.summary.completed = true;
                Vec::new()
            }
            "auto_retry_start" => {
                self.retrying = true;
                self.summary.completed = false;
                self.summary.error = None;
                Vec::new()
            }
            "auto_retry_end" => {
                self.retrying = false;
                if v.get("success").and_then(Value::as_bool) == Some(false) {
                    let said = str_at(&v, &["finalError"])
                        .unwrap_or_else(|| "Pi gave up retrying the model request".into());
                    return self.fail(said, None);
                }
                Vec::new()
            }
            "error" => {
                let said = str_at(&v, &["error", "message"])
                    .or_else(|| str_at(&v, &["message"]))
                    .or_else(|| str_at(&v, &["error"]))
                    .unwrap_or_else(|| v.to_string());
                self.fail(said, None)
            }
            _ => Vec::new(),
        }
    }

    fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        // Cut off while retrying: the failure it was retrying is the end.
        s.completed &= !self.retrying;
        s
    }

    fn running(&self) -> (Option<&str>, &Usage) {
        (self.summary.model.as_deref(), &self.summary.usage)
    }

    fn finished(&self) -> bool {
        self.summary.completed && !self.retrying
    }
}
