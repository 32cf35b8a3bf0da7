//! `adapterType: "claude_local"`: Claude Code in print mode,
//! `claude --print - --output-format stream-json --verbose`, prompt on stdin.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::pricing::{self, MessageTokens};

use super::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};
use super::{Built, CliKind, RunSpec, ENGINE_UPSTREAM_UNUSED};
use crate::config::{Fields, KnownKeys};
use paperclip_core::billing::BillingType;

#[derive(Clone, Copy)]
pub struct Claude;

pub struct ClaudeExtra {
    effort: Option<String>,
    max_turns: Option<u64>,
    skip_permissions: bool,
}

impl CliKind for Claude {
    type Extra = ClaudeExtra;

    fn kind(&self) -> &'static str {
        "claude_local"
    }

    fn default_command(&self) -> &'static str {
        "claude"
    }

    fn provider(&self, _model: Option<&str>) -> &'static str {
        "anthropic"
    }

    /// Bedrock bills through AWS whatever else is set; otherwise an API key
    /// is metered and Claude's login (`CLAUDE_CODE_OAUTH_TOKEN` or its
    /// credentials file) is the subscription.
    fn billing_type(&self, env: &BTreeMap<String, String>) -> BillingType {
        let bedrock = matches!(
            env.get("CLAUDE_CODE_USE_BEDROCK").map(String::as_str),
            Some("1" | "true")
        ) || super::is_set(env, "ANTHROPIC_BEDROCK_BASE_URL");
        if bedrock {
            return BillingType::MeteredApi;
        }
        BillingType::by_key(super::is_set(env, "ANTHROPIC_API_KEY"))
    }

    /// Unused of upstream's: `chrome` (its `--chrome`), and how long it waits
    /// for Claude to exit after the result (`terminalResultCleanupGraceMs`;
    /// here the CLI exits on its own), besides the engine keys.
    fn known_keys(&self) -> KnownKeys {
        KnownKeys::new(
            &["effort", "maxTurnsPerRun", "dangerouslySkipPermissions"],
            &["chrome", "terminalResultCleanupGraceMs"],
        )
        .with(&[], ENGINE_UPSTREAM_UNUSED)
    }

    fn parse_extra(&self, f: &mut Fields<'_>) -> ClaudeExtra {
        let effort = f.string("effort").filter(|s| !s.is_empty());
        if let Some(e) = &effort {
            if !["low", "medium", "high", "xhigh", "max"].contains(&e.as_str()) {
                f.error(&["effort"], "must be one of low, medium, high, xhigh, max");
            }
        }
        let max_turns = f.get("maxTurnsPerRun").and_then(|v| match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => None,
        });
        if f.get("maxTurnsPerRun").is_some() && max_turns.is_none() {
            f.error(&["maxTurnsPerRun"], "must be a positive integer");
        }
        ClaudeExtra {
            effort,
            max_turns,
            skip_permissions: f.bool("dangerouslySkipPermissions", false),
        }
    }

    fn build(&self, run: &RunSpec<'_, ClaudeExtra>) -> std::io::Result<Built> {
        let mut args: Vec<String> = [
            "--print",
            "-",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(String::from)
        .to_vec();
        let mut env = BTreeMap::new();
        let mut notes = Vec::new();
        // Claude Code runs a slash command only from the argument, not from
        // stdin: Compact now's `/compact` goes there.
        let compact = run.session_id.is_some()
            && Some(run.prompt.trim())
                == paperclip_core::context::compaction_prompt("claude_local");
        if compact {
            args[1] = run.prompt.trim().to_string();
            notes.push("compacting the session (Compact now)".into());
        }
        if let Some(session) = run.session_id {
            args.extend(["--resume".into(), session.to_string()]);
        }
        if let Some(model) = &run.config.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if let Some(effort) = &run.extra.effort {
            args.extend(["--effort".into(), effort.clone()]);
        }
        if let Some(n) = run.extra.max_turns {
            args.extend(["--max-turns".into(), n.to_string()]);
        }
        if run.extra.skip_permissions {
            args.push("--dangerously-skip-permissions".into());
            // Claude Code refuses to skip permissions as root outside a
            // sandbox; a server run as root (containers) is one, so say so.
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 && !run.config.env.contains_key("IS_SANDBOX") {
                env.insert("IS_SANDBOX".into(), "1".into());
                notes.push(
                    "running as root: set IS_SANDBOX=1 so Claude Code accepts --dangerously-skip-permissions".into(),
                );
            }
        }
        if let Some(file) = &run.config.instructions_file {
            args.extend([
                "--append-system-prompt-file".into(),
                file.display().to_string(),
            ]);
        }
        if let Some(dir) = claude_skills_root(run)? {
            args.extend(["--add-dir".into(), dir]);
        }
        args.extend(run.config.extra_args.iter().cloned());
        Ok(Built {
            args,
            prompt_on_stdin: !compact,
            env,
            notes,
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(ClaudeParser::default())
    }

    fn acp_command(&self) -> Option<&'static str> {
        Some("claude-code-acp")
    }

    fn resume_rejected(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        t.contains("no conversation found") || t.contains("session id") && t.contains("not found")
    }
}

/// Claude Code loads skills from `<dir>/.claude/skills/<name>/SKILL.md` of
/// every `--add-dir`; the shared skills folder is linked into that layout in
/// the agent's scratch dir.
fn claude_skills_root(run: &RunSpec<'_, ClaudeExtra>) -> std::io::Result<Option<String>> {
    let Some(skills) = run.skills_dir else {
        return Ok(None);
    };
    let root = run.scratch.join("add-dir");
    let link = root.join(".claude").join("skills");
    std::fs::create_dir_all(root.join(".claude"))?;
    if std::fs::read_link(&link).ok().as_deref() != Some(skills) {
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(skills, &link)?;
    }
    Ok(Some(root.display().to_string()))
}

#[derive(Default)]
pub struct ClaudeParser {
    summary: Summary,
    /// Each model request's usage by message id: Claude Code prints one
    /// `assistant` line per content block, each carrying its message's usage,
    /// so a message is counted once (its latest figures).
    turns: HashMap<String, Usage>,
    /// Usage of assistant lines without a message id, counted as they come.
    unnamed: Usage,
    /// The `result` line's totals replaced the per-turn sum.
    finished: bool,
}

impl ClaudeParser {
    /// Takes an assistant message's usage into the running total (until the
    /// CLI's own totals arrive in its `result` line).
    fn turn_usage(&mut self, v: &Value) {
        let Some(u) = v.pointer("/message/usage") else {
            return;
        };
        if self.finished {
            return;
        }
        let tokens = MessageTokens {
            input: u64_at(u, &["input_tokens"]),
            cache_write: u64_at(u, &["cache_creation_input_tokens"]),
            cache_read: u64_at(u, &["cache_read_input_tokens"]),
            output: u64_at(u, &["output_tokens"]),
        };
        let model = str_at(v, &["message", "model"]).or_else(|| self.summary.model.clone());
        let usage = Usage {
            input_tokens: tokens.input + tokens.cache_write,
            cached_input_tokens: tokens.cache_read,
            output_tokens: tokens.output,
            cost_usd: model.and_then(|m| pricing::anthropic(&m, tokens)),
        };
        match str_at(v, &["message", "id"]) {
            Some(id) => {
                self.turns.insert(id, usage);
            }
            None => self.unnamed.add(&usage),
        }
        let mut total = self.unnamed.clone();
        for turn in self.turns.values() {
            total.add(turn);
        }
        self.summary.usage = total;
    }
}

impl StreamParser for ClaudeParser {
    fn line(&mut self, line: &str) -> Vec<Item> {
        let Some(v) = json_line(line, &mut self.summary) else {
            return Vec::new();
        };
        let s = &mut self.summary;
        if let Some(id) = str_at(&v, &["session_id"]) {
            s.session_id = Some(id);
        }
        match v.get("type").and_then(Value::as_str) {
            Some("system") if str_at(&v, &["subtype"]).as_deref() == Some("init") => {
                s.model = str_at(&v, &["model"]).or(s.model.take());
                let tools = v
                    .get("tools")
                    .and_then(Value::as_array)
                    .map(|t| {
                        t.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                vec![Item::Init {
                    session_id: s.session_id.clone(),
                    model: s.model.clone(),
                    tools,
                }]
            }
            Some("system") if str_at(&v, &["subtype"]).as_deref() == Some("compact_boundary") => {
                let post_tokens = v
                    .pointer("/compact_metadata/post_tokens")
                    .and_then(Value::as_u64);
                if post_tokens.is_some() {
                    s.context_tokens = post_tokens;
                }
                vec![Item::Compacted {
                    trigger: str_at(&v, &["compact_metadata", "trigger"]),
                    pre_tokens: v
                        .pointer("/compact_metadata/pre_tokens")
                        .and_then(Value::as_u64),
                    post_tokens,
                }]
            }
            Some("rate_limit_event") => {
                for window in crate::cli::quota::claude_windows(&v) {
                    s.report_window(window);
                }
                Vec::new()
            }
            Some("assistant") => {
                // What the main conversation sent last is what its context
                // holds (a subagent's requests are its own context).
                if str_at(&v, &["parent_tool_use_id"]).is_none_or(|p| p.is_empty()) {
                    if let Some(u) = v.pointer("/message/usage") {
                        s.context_tokens = Some(
                            u64_at(u, &["input_tokens"])
                                + u64_at(u, &["cache_creation_input_tokens"])
                                + u64_at(u, &["cache_read_input_tokens"]),
                        );
                    }
                }
                self.turn_usage(&v);
                nested(&v, content_items(&v, true))
            }
            // A user line's text is the prompt (a subagent's is echoed), not
            // what the model said; its tool results are the steps.
            Some("user") => nested(&v, content_items(&v, false)),
            Some("result") => {
                s.completed = true;
                s.result_text = str_at(&v, &["result"]);
                s.stop_reason = str_at(&v, &["stop_reason"]).or_else(|| str_at(&v, &["subtype"]));
                s.num_turns = v.get("num_turns").and_then(Value::as_u64);
                let usage = v.get("usage").cloned().unwrap_or(Value::Null);
                // The CLI's totals (its side requests included) supersede
                // the per-turn sum; its price too, when it gives one.
                let streamed_cost = s.usage.cost_usd;
                s.usage = Usage {
                    input_tokens: u64_at(&usage, &["input_tokens"])
                        + u64_at(&usage, &["cache_creation_input_tokens"]),
                    cached_input_tokens: u64_at(&usage, &["cache_read_input_tokens"]),
                    output_tokens: u64_at(&usage, &["output_tokens"]),
                    cost_usd: v
                        .get("total_cost_usd")
                        .and_then(Value::as_f64)
                        .or(streamed_cost),
                };
                self.finished = true;
                let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                let subtype = str_at(&v, &["subtype"]).unwrap_or_default();
                if is_error || subtype.starts_with("error") {
                    let message = s
                        .result_text
                        .clone()
                        .filter(|t| !t.trim().is_empty())
                        .or_else(|| errors_text(&v))
                        .unwrap_or_else(|| format!("Claude Code reported {subtype}"));
                    s.error = Some(message.clone());
                    return vec![Item::Error { message }];
                }
                Vec::new()
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

    fn finished(&self) -> bool {
        self.finished
    }
}

fn errors_text(v: &Value) -> Option<String> {
    let list = v.get("errors")?.as_array()?;
    let parts: Vec<String> = list
        .iter()
        .map(|e| {
            e.as_str()
                .map(String::from)
                .unwrap_or_else(|| e.to_string())
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A subagent's lines name the `Task` call that started it
/// (`parent_tool_use_id`); its steps are kept under that call.
fn nested(v: &Value, items: Vec<Item>) -> Vec<Item> {
    match str_at(v, &["parent_tool_use_id"]).filter(|p| !p.is_empty()) {
        Some(parent) => items
            .into_iter()
            .map(|item| Item::Nested {
                parent: parent.clone(),
                item: Box::new(item),
            })
            .collect(),
        None => items,
    }
}

/// Text, tool calls and tool results in an assistant or user message.
fn content_items(v: &Value, model: bool) -> Vec<Item> {
    let Some(blocks) = v.pointer("/message/content").and_then(Value::as_array) else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") if model => {
                let text = str_at(b, &["text"])?;
                (!text.trim().is_empty()).then_some(Item::Assistant { text })
            }
            Some("tool_use") => Some(Item::ToolCall {
                id: str_at(b, &["id"]).unwrap_or_default(),
                name: str_at(b, &["name"]).unwrap_or_default(),
                input: b.get("input").cloned().unwrap_or(Value::Null),
            }),
            Some("tool_result") => Some(Item::ToolResult {
                id: str_at(b, &["tool_use_id"]).unwrap_or_default(),
                output: tool_result_text(b.get("content")),
                is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }),
            _ => None,
        })
        .collect()
}

fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_claude_keys_are_known_and_others_named() {
        // What upstream's hire form builds for claude_local, plus its engine
        // and instructions-bundle keys.
        let good = serde_json::json!({
            "cwd": "/tmp", "model": "claude-sonnet-4-5", "effort": "high", "chrome": true,
            "timeoutSec": 0, "graceSec": 15, "env": { "ANTHROPIC_API_KEY": "k" },
            "maxTurnsPerRun": 300, "dangerouslySkipPermissions": true, "command": "claude",
            "extraArgs": ["--verbose"], "instructionsFilePath": "/tmp/AGENTS.md",
            "promptTemplate": "Go", "engine": "cli", "workspaceStrategy": { "type": "git_worktree" },
            "instructionsBundleMode": "managed", "paperclipSkillSync": { "desiredSkills": [] },
            "filesystemScope": "workspace",
        });
        use crate::Adapter;
        let adapter = super::super::CliAdapter::new(Claude);
        crate::config::assert_keys(&adapter, good, "agentDbMode");
        assert!(adapter.known_keys().unused.contains(&"chrome"));
        // Upstream's older name of extraArgs, read when extraArgs is empty.
        let args = |c| adapter.parse_config(&c).unwrap().0.extra_args;
        assert_eq!(args(serde_json::json!({ "args": ["-a"] })), ["-a"]);
        assert_eq!(
            args(serde_json::json!({ "args": ["-a"], "extraArgs": ["-e"] })),
            ["-e"]
        );
    }

    fn parse(lines: &[&str]) -> (Vec<Item>, Summary) {
        let mut p = ClaudeParser::default();
        let items = lines.iter().flat_map(|l| p.line(l)).collect();
        (items, p.summary())
    }

    #[test]
    fn a_tool_run_gives_steps_session_and_usage() {
        let (items, s) = parse(&[
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5","tools":["Bash","Read"]}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Checking out."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"curl -X POST x"}}]},"session_id":"s-1"}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}]},"session_id":"s-1"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s-1","num_turns":2,"total_cost_usd":0.0123,"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":20}}"#,
        ]);
        assert_eq!(items.len(), 4);
        assert!(matches!(&items[2], Item::ToolCall { name, .. } if name == "Bash"));
        assert!(
            matches!(&items[3], Item::ToolResult { output, is_error: false, .. } if output == "ok")
        );
        assert!(s.completed && s.error.is_none());
        assert_eq!(s.session_id.as_deref(), Some("s-1"));
        assert_eq!(s.usage.input_tokens, 15);
        assert_eq!(s.usage.cached_input_tokens, 100);
        assert_eq!(s.usage.cost_usd, Some(0.0123));
        assert_eq!(s.result_text.as_deref(), Some("Done."));
    }

    #[test]
    fn a_subagents_steps_name_their_task_call_and_compaction_is_noted() {
        let (items, _) = parse(&[
            r#"{"type":"assistant","parent_tool_use_id":null,"message":{"content":[{"type":"tool_use","id":"task1","name":"Task","input":{"description":"Look"}}]}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"task1","message":{"content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a"}}]}}"#,
            r#"{"type":"user","parent_tool_use_id":"task1","message":{"content":[{"type":"text","text":"Look."}]}}"#,
            r#"{"type":"user","parent_tool_use_id":"task1","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"x"}]}}"#,
            r#"{"type":"system","subtype":"compact_boundary","session_id":"s","compact_metadata":{"trigger":"auto","pre_tokens":160000}}"#,
        ]);
        assert!(matches!(&items[0], Item::ToolCall { name, .. } if name == "Task"));
        assert!(
            matches!(&items[1], Item::Nested { parent, item } if parent == "task1" && matches!(**item, Item::ToolCall { .. }))
        );
        assert!(matches!(&items[2], Item::Nested { parent, .. } if parent == "task1"));
        assert_eq!(
            items[3],
            Item::Compacted {
                trigger: Some("auto".into()),
                pre_tokens: Some(160_000),
                post_tokens: None,
            }
        );
    }

    #[test]
    fn context_is_the_last_request_and_compaction_what_remains() {
        let (items, s) = parse(&[
            r#"{"type":"assistant","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"a"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":50000,"output_tokens":5}}}"#,
            r#"{"type":"assistant","message":{"id":"m2","model":"claude-sonnet-4-5","content":[{"type":"text","text":"b"}],"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":123000,"output_tokens":50}}}"#,
            r#"{"type":"assistant","parent_tool_use_id":"task1","message":{"id":"m3","content":[],"usage":{"input_tokens":9,"cache_read_input_tokens":0,"output_tokens":1}}}"#,
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796666232,"rateLimitType":"five_hour","unifiedWindows":{"five_hour":{"utilization":0.78,"resetsAt":1796666232}}},"session_id":"s"}"#,
        ]);
        assert_eq!(
            s.context_tokens,
            Some(124_000),
            "the main conversation's last request"
        );
        assert_eq!(s.quota.len(), 1);
        assert_eq!(s.quota[0].used_percent, Some(78.0));
        assert_eq!(items.len(), 2);
        // As Claude Code 2.1 printed a `/compact` run.
        let (items, s) = parse(&[
            r#"{"type":"system","subtype":"compact_boundary","session_id":"s","compact_metadata":{"trigger":"manual","pre_tokens":124050,"post_tokens":2701,"duration_ms":146}}"#,
        ]);
        assert_eq!(s.context_tokens, Some(2701));
        assert_eq!(
            items[0],
            Item::Compacted {
                trigger: Some("manual".into()),
                pre_tokens: Some(124_050),
                post_tokens: Some(2701),
            }
        );
    }

    #[test]
    fn an_error_result_is_a_failure_with_its_text() {
        let (items, s) = parse(&[
            "not json at all",
            r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 404 model not found","session_id":"s-2"}"#,
        ]);
        assert_eq!(s.error.as_deref(), Some("API Error: 404 model not found"));
        assert_eq!(s.last_other_line.as_deref(), Some("not json at all"));
        assert!(matches!(&items[0], Item::Error { .. }));
    }

    #[test]
    fn each_model_request_counts_once_while_the_run_goes() {
        let mut p = ClaudeParser::default();
        let usage = r#""usage":{"input_tokens":60000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}"#;
        p.line(r#"{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5","tools":[]}"#);
        // One request, two content blocks: two lines with the same usage.
        for block in [
            r#"{"type":"text","text":"hi"}"#,
            r#"{"type":"tool_use","id":"t1","name":"Bash","input":{}}"#,
        ] {
            p.line(&format!(
                r#"{{"type":"assistant","message":{{"id":"msg_1","model":"claude-sonnet-4-5","content":[{block}],{usage}}}}}"#
            ));
        }
        let (model, u) = p.running();
        assert_eq!(model, Some("claude-sonnet-4-5"));
        assert_eq!(u.input_tokens, 60_000);
        let one = u.cost_usd.unwrap();
        assert!((one - (0.18 + 0.000015)).abs() < 1e-9, "{one}");
        p.line(&format!(
            r#"{{"type":"assistant","message":{{"id":"msg_2","model":"claude-sonnet-4-5","content":[],{usage}}}}}"#
        ));
        assert_eq!(p.running().1.input_tokens, 120_000);
        assert!((p.running().1.cost_usd.unwrap() - 2.0 * one).abs() < 1e-9);
        // The CLI's own totals, when it prints them, replace the sum.
        p.line(r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.5,"usage":{"input_tokens":130000,"output_tokens":9}}"#);
        let s = p.summary();
        assert_eq!(s.usage.input_tokens, 130_000);
        assert_eq!(s.usage.cost_usd, Some(0.5));
    }

    #[test]
    fn an_unpriced_model_counts_tokens_without_a_cost() {
        let mut p = ClaudeParser::default();
        p.line(r#"{"type":"assistant","message":{"id":"m","model":"claude-next-9","content":[],"usage":{"input_tokens":10,"output_tokens":2}}}"#);
        let (_, u) = p.running();
        assert_eq!((u.input_tokens, u.output_tokens, u.cost_usd), (10, 2, None));
    }
}
