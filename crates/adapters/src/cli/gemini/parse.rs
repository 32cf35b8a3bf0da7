//! Gemini's `stream-json` events: `init` (session, model), `message`
//! (the user's prompt, then the assistant's text in `delta` pieces),
//! `tool_use` / `tool_result`, `error` (warnings too) and one `result`
//! with the run's status and its token stats per model.

use serde_json::Value;

use super::super::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};
use super::{price, AUTO_MODEL};

#[derive(Default)]
pub struct GeminiParser {
    summary: Summary,
    /// Assistant text not yet reported: the CLI prints each streamed chunk
    /// as its own `message`, and the transcript shows one step per reply.
    pending: String,
    finished: bool,
}

impl GeminiParser {
    fn flush(&mut self, items: &mut Vec<Item>) {
        let text = std::mem::take(&mut self.pending);
        if !text.trim().is_empty() {
            self.summary.result_text = Some(text.clone());
            items.push(Item::Assistant { text });
        }
    }

    fn result(&mut self, v: &Value) {
        self.finished = true;
        let status = str_at(v, &["status"]).unwrap_or_default();
        self.summary.completed = status == "success";
        self.summary.stop_reason = Some(status.clone());
        if status != "success" {
            let message = str_at(v, &["error", "message"])
                .or_else(|| str_at(v, &["error"]))
                .unwrap_or_else(|| format!("gemini ended with status {status}"));
            self.summary.error = Some(message);
        }
        let stats = v.get("stats").cloned().unwrap_or(Value::Null);
        let per_model: Vec<(String, Value)> = stats
            .get("models")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let per_model = if per_model.is_empty() {
            let name = self.summary.model.clone().unwrap_or_default();
            vec![(name, stats)]
        } else {
            per_model
        };
        let mut total = Usage::default();
        let mut all_priced = true;
        let mut biggest: Option<(u64, String)> = None;
        for (model, stats) in per_model {
            let usage = model_usage(&stats);
            if usage.is_empty() {
                continue;
            }
            let cost = price(&model, &usage);
            all_priced &= cost.is_some();
            let size = usage.input_tokens + usage.cached_input_tokens + usage.output_tokens;
            if biggest.as_ref().is_none_or(|(s, _)| size > *s) && !model.is_empty() {
                biggest = Some((size, model.clone()));
            }
            total.add(&Usage {
                cost_usd: cost,
                ..usage
            });
        }
        if !all_priced {
            total.cost_usd = None;
        }
        self.summary.usage = total;
        if let Some((_, model)) = biggest {
            self.summary.model = Some(model);
        }
    }
}

/// One model's tokens: `input_tokens` counts the whole prompt, `cached` the
/// part read from the cache; what the total holds beyond prompt and
/// candidates is thinking, billed as output.
fn model_usage(stats: &Value) -> Usage {
    let prompt = u64_at(stats, &["input_tokens"]);
    let cached = u64_at(stats, &["cached"]).min(prompt);
    let candidates = u64_at(stats, &["output_tokens"]);
    let total = u64_at(stats, &["total_tokens"]);
    Usage {
        input_tokens: prompt - cached,
        cached_input_tokens: cached,
        output_tokens: candidates.max(total.saturating_sub(prompt)),
        cost_usd: None,
    }
}

impl StreamParser for GeminiParser {
    fn line(&mut self, line: &str) -> Vec<Item> {
        let Some(v) = json_line(line, &mut self.summary) else {
            return Vec::new();
        };
        if let Some(id) = str_at(&v, &["session_id"]).filter(|s| !s.is_empty()) {
            self.summary.session_id = Some(id);
        }
        let mut items = Vec::new();
        let kind = str_at(&v, &["type"]).unwrap_or_default();
        if kind == "message" && str_at(&v, &["role"]).as_deref() == Some("assistant") {
            self.pending
                .push_str(&str_at(&v, &["content"]).unwrap_or_default());
            return items;
        }
        self.flush(&mut items);
        match kind.as_str() {
            "init" => {
                let model = str_at(&v, &["model"]).filter(|m| m != AUTO_MODEL);
                if self.summary.model.is_none() {
                    self.summary.model = model.clone();
                }
                items.push(Item::Init {
                    session_id: self.summary.session_id.clone(),
                    model,
                    tools: Vec::new(),
                });
            }
            "tool_use" => items.push(Item::ToolCall {
                id: str_at(&v, &["tool_id"]).unwrap_or_default(),
                name: str_at(&v, &["tool_name"]).unwrap_or_default(),
                input: v.get("parameters").cloned().unwrap_or(Value::Null),
            }),
            "tool_result" => {
                let ok = str_at(&v, &["status"]).as_deref() == Some("success");
                items.push(Item::ToolResult {
                    id: str_at(&v, &["tool_id"]).unwrap_or_default(),
                    output: str_at(&v, &["output"])
                        .or_else(|| str_at(&v, &["error", "message"]))
                        .unwrap_or_default(),
                    is_error: !ok,
                });
            }
            "error" => {
                let message = str_at(&v, &["message"]).unwrap_or_else(|| v.to_string());
                // Warnings (a loop detected, a blocked step) do not fail the run.
                if str_at(&v, &["severity"]).as_deref() != Some("warning") {
                    self.summary.error = Some(message.clone());
                }
                items.push(Item::Error { message });
            }
            "result" => self.result(&v),
            _ => {}
        }
        items
    }

    fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        if !self.pending.trim().is_empty() {
            s.result_text = Some(self.pending.clone());
        }
        s
    }

    fn running(&self) -> (Option<&str>, &Usage) {
        (self.summary.model.as_deref(), &self.summary.usage)
    }

    fn finished(&self) -> bool {
        self.finished
    }
}
