//! `adapterType: "opencode_local"`: OpenCode, `opencode run --format json`.
//! OpenCode prices the models it knows in its `step_finish` parts.

use std::collections::BTreeMap;

use serde_json::Value;

use super::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};
use super::{Built, CliConfig, CliKind, RunSpec};
use crate::config::{Fields, KnownKeys};

#[derive(Clone, Copy)]
pub struct OpenCode;

pub struct OpenCodeExtra {
    variant: Option<String>,
}

impl CliKind for OpenCode {
    type Extra = OpenCodeExtra;

    fn kind(&self) -> &'static str {
        "opencode_local"
    }

    fn default_command(&self) -> &'static str {
        "opencode"
    }

    fn provider(&self, model: Option<&str>) -> &'static str {
        match model.and_then(|m| m.split_once('/')).map(|(p, _)| p) {
            Some("anthropic") => "anthropic",
            Some("openai") => "openai",
            Some("google") => "google",
            Some("openrouter") => "openrouter",
            _ => "opencode",
        }
    }

    /// Unused of upstream's: `dangerouslySkipPermissions`, with which it
    /// writes an OpenCode config allowing access outside the project; here
    /// OpenCode runs with its own defaults.
    fn known_keys(&self) -> KnownKeys {
        KnownKeys::new(&["variant"], &["dangerouslySkipPermissions"])
    }

    fn parse_extra(&self, f: &mut Fields<'_>) -> OpenCodeExtra {
        if let Some(Value::String(m)) = f.get("model") {
            if !m.is_empty() && !m.contains('/') {
                f.error(
                    &["model"],
                    "must be provider/model, e.g. anthropic/claude-sonnet-4-5",
                );
            }
        }
        OpenCodeExtra {
            variant: f.string("variant").filter(|s| !s.is_empty()),
        }
    }

    fn build(&self, run: &RunSpec<'_, OpenCodeExtra>) -> std::io::Result<Built> {
        let mut args: Vec<String> = vec!["run".into(), "--format".into(), "json".into()];
        if let Some(session) = run.session_id {
            args.extend(["--session".into(), session.to_string()]);
        }
        if let Some(model) = &run.config.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(variant) = &run.extra.variant {
            args.extend(["--variant".into(), variant.clone()]);
        }
        args.extend(run.config.extra_args.iter().cloned());
        let mut env = BTreeMap::new();
        let mut instructions = Vec::new();
        if let Some(file) = &run.config.instructions_file {
            instructions.push(file.display().to_string());
        }
        if let Some(skills) = run.skills_dir {
            instructions.push(
                skills
                    .join("paperclip")
                    .join("SKILL.md")
                    .display()
                    .to_string(),
            );
        }
        if !instructions.is_empty() {
            // Merged over the user's own config, so their providers and
            // keys still apply.
            let content = serde_json::json!({ "instructions": instructions });
            env.insert("OPENCODE_CONFIG_CONTENT".into(), content.to_string());
        }
        Ok(Built {
            args,
            prompt_on_stdin: true,
            env,
            notes: Vec::new(),
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(OpenCodeParser::default())
    }

    fn resume_rejected(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        t.contains("session") && (t.contains("not found") || t.contains("notfound"))
    }

    fn complete(&self, summary: &mut Summary, config: &CliConfig) {
        if summary.model.is_none() {
            summary.model = config.model.clone();
        }
    }
}

#[derive(Default)]
pub struct OpenCodeParser {
    summary: Summary,
    started: bool,
}

impl StreamParser for OpenCodeParser {
    fn line(&mut self, line: &str) -> Vec<Item> {
        let Some(v) = json_line(line, &mut self.summary) else {
            return Vec::new();
        };
        let s = &mut self.summary;
        if let Some(id) = str_at(&v, &["sessionID"]) {
            s.session_id = Some(id);
        }
        let part = v.get("part").cloned().unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "step_start" if !self.started => {
                self.started = true;
                vec![Item::Init {
                    session_id: s.session_id.clone(),
                    model: None,
                    tools: Vec::new(),
                }]
            }
            "text" => str_at(&part, &["text"])
                .filter(|t| !t.trim().is_empty())
                .map(|text| {
                    s.result_text = Some(text.clone());
                    vec![Item::Assistant { text }]
                })
                .unwrap_or_default(),
            "tool_use" => {
                let id = str_at(&part, &["callID"]).unwrap_or_default();
                let state = part.get("state").cloned().unwrap_or(Value::Null);
                let status = str_at(&state, &["status"]).unwrap_or_default();
                let mut items = vec![Item::ToolCall {
                    id: id.clone(),
                    name: str_at(&part, &["tool"]).unwrap_or_default(),
                    input: state.get("input").cloned().unwrap_or(Value::Null),
                }];
                if status == "completed" || status == "error" {
                    items.push(Item::ToolResult {
                        id,
                        output: str_at(&state, &["output"])
                            .or_else(|| str_at(&state, &["error"]))
                            .unwrap_or_default(),
                        is_error: status == "error",
                    });
                }
                items
            }
            "step_finish" => {
                s.completed = true;
                s.stop_reason = str_at(&part, &["reason"]);
                s.usage.add(&Usage {
                    input_tokens: u64_at(&part, &["tokens", "input"]),
                    cached_input_tokens: u64_at(&part, &["tokens", "cache", "read"]),
                    output_tokens: u64_at(&part, &["tokens", "output"])
                        + u64_at(&part, &["tokens", "reasoning"]),
                    cost_usd: part
                        .get("cost")
                        .and_then(Value::as_f64)
                        .filter(|c| *c > 0.0),
                });
                Vec::new()
            }
            "error" => {
                let message = str_at(&v, &["error", "data", "message"])
                    .or_else(|| str_at(&v, &["error", "message"]))
                    .or_else(|| str_at(&v, &["error", "name"]))
                    .unwrap_or_else(|| v.to_string());
                s.error = Some(message.clone());
                vec![Item::Error { message }]
            }
            _ => Vec::new(),
        }
    }

    fn summary(&self) -> Summary {
        self.summary.clone()
    }

    fn running(&self) -> (Option<&str>, &Usage) {
        (self.summary.model.as_deref(), &self.summary.usage)
    }

    /// A step that did not end in tool calls is the last one.
    fn finished(&self) -> bool {
        self.summary.completed && self.summary.stop_reason.as_deref() != Some("tool-calls")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_opencode_keys_are_known_and_others_named() {
        let good = serde_json::json!({
            "cwd": "/tmp", "model": "anthropic/claude-sonnet-4-5", "variant": "high",
            "dangerouslySkipPermissions": true, "command": "opencode", "extraArgs": [],
            "env": {}, "timeoutSec": 0, "graceSec": 15, "instructionsFilePath": "/tmp/AGENTS.md",
            "helloProbeTimeoutSec": 60,
        });
        use crate::Adapter;
        let adapter = super::super::CliAdapter::new(OpenCode);
        // The issue's example: a k8s plugin's key, unknown to the local CLI.
        crate::config::assert_keys(&adapter, good, "agentDbMode");
        assert!(
            !adapter.known_keys().knows("engine"),
            "no ACP engine upstream"
        );
    }

    #[test]
    fn steps_give_session_text_tools_and_tokens() {
        let mut p = OpenCodeParser::default();
        let lines = [
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"tool_use","sessionID":"ses_1","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"echo hi"},"output":"hi\n"}}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":100,"output":10,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}}"#,
            r#"{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}"#,
            r#"{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"All done"}}"#,
            r#"{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":120,"output":5,"reasoning":0,"cache":{"read":50,"write":0}},"cost":0.002}}"#,
        ];
        let items: Vec<Item> = lines.iter().flat_map(|l| p.line(l)).collect();
        assert_eq!(items.len(), 4, "{items:?}");
        let s = p.summary();
        assert_eq!(s.session_id.as_deref(), Some("ses_1"));
        assert_eq!(s.usage.input_tokens, 220);
        assert_eq!(s.usage.cached_input_tokens, 50);
        assert_eq!(s.usage.output_tokens, 15);
        assert_eq!(s.usage.cost_usd, Some(0.002));
        assert_eq!(s.result_text.as_deref(), Some("All done"));
    }
}
