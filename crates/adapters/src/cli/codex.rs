//! `adapterType: "codex_local"`: OpenAI Codex CLI, `codex exec --json`,
//! prompt on stdin (`-`). Codex prices nothing itself; a small rate table
//! prices the models we know, anything else stays unpriced.

use std::collections::BTreeMap;

use serde_json::Value;

use super::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};
use super::{Built, CliConfig, CliKind, RunSpec, ENGINE_UPSTREAM_UNUSED};
use crate::config::{Fields, KnownKeys};
use paperclip_core::billing::BillingType;

#[derive(Clone, Copy)]
pub struct Codex;

pub struct CodexExtra {
    bypass: bool,
    search: bool,
    reasoning_effort: Option<String>,
    overrides: BTreeMap<String, String>,
}

impl CliKind for Codex {
    type Extra = CodexExtra;

    fn kind(&self) -> &'static str {
        "codex_local"
    }

    fn default_command(&self) -> &'static str {
        "codex"
    }

    fn provider(&self, _model: Option<&str>) -> &'static str {
        "openai"
    }

    /// An OpenAI key is metered; without one Codex uses its ChatGPT login.
    fn billing_type(&self, env: &BTreeMap<String, String>) -> BillingType {
        BillingType::by_key(super::is_set(env, "OPENAI_API_KEY"))
    }

    /// `configOverrides` is ours (`-c key=value`). Unused of upstream's:
    /// `fastMode` (its Fast mode), `outputInactivityTimeoutMs` (its silence
    /// monitor; `timeoutSec` bounds a run here) and
    /// `paperclipConnectorSkillDigest` (its skill cache), besides the engine
    /// keys.
    fn known_keys(&self) -> KnownKeys {
        KnownKeys::new(
            &[
                "modelReasoningEffort",
                "search",
                "dangerouslyBypassApprovalsAndSandbox",
                "configOverrides",
            ],
            &[
                "fastMode",
                "outputInactivityTimeoutMs",
                "paperclipConnectorSkillDigest",
            ],
        )
        .with(&[], ENGINE_UPSTREAM_UNUSED)
    }

    fn parse_extra(&self, f: &mut Fields<'_>) -> CodexExtra {
        let overrides = f.string_map("configOverrides");
        for key in overrides.keys() {
            if key.is_empty() || key.contains('=') || key.contains(char::is_whitespace) {
                f.error(&["configOverrides", key], "must be a dotted config key");
            }
        }
        CodexExtra {
            bypass: f.bool("dangerouslyBypassApprovalsAndSandbox", false),
            search: f.bool("search", false),
            reasoning_effort: f.string("modelReasoningEffort").filter(|s| !s.is_empty()),
            overrides,
        }
    }

    fn build(&self, run: &RunSpec<'_, CodexExtra>) -> std::io::Result<Built> {
        // `--search` is a top-level flag in 0.169 (`codex --search exec`).
        let mut args: Vec<String> = Vec::new();
        if run.extra.search {
            args.push("--search".into());
        }
        args.extend([
            "exec".into(),
            "--json".into(),
            "--skip-git-repo-check".into(),
        ]);
        if let Some(model) = &run.config.model {
            args.extend(["--model".into(), model.clone()]);
        }
        if run.extra.bypass {
            args.push("--dangerously-bypass-approvals-and-sandbox".into());
        }
        let mut config: Vec<(String, String)> = vec![
            // The agent's shell must see PAPERCLIP_API_KEY, which Codex's
            // default policy drops for having KEY in its name.
            ("shell_environment_policy.inherit".into(), "\"all\"".into()),
            (
                "shell_environment_policy.ignore_default_excludes".into(),
                "true".into(),
            ),
        ];
        if let Some(effort) = &run.extra.reasoning_effort {
            config.push(("model_reasoning_effort".into(), format!("\"{effort}\"")));
        }
        if let Some(file) = instructions_file(run)? {
            config.push((
                "model_instructions_file".into(),
                toml_string(&file.display().to_string()),
            ));
        }
        config.extend(
            run.extra
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        for (k, v) in config {
            args.extend(["-c".into(), format!("{k}={v}")]);
        }
        args.extend(run.config.extra_args.iter().cloned());
        if let Some(session) = run.session_id {
            args.extend(["resume".into(), session.to_string()]);
        }
        args.push("-".into());
        // Codex is a Rust program: with backtraces on (inherited from a
        // developer's shell or a test harness) its last stderr line is a
        // stack frame instead of the error we classify.
        let env = BTreeMap::from([
            ("RUST_BACKTRACE".to_string(), "0".to_string()),
            ("RUST_LIB_BACKTRACE".to_string(), "0".to_string()),
        ]);
        Ok(Built {
            args,
            prompt_on_stdin: true,
            env,
            notes: Vec::new(),
        })
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(CodexParser::default())
    }

    fn acp_command(&self) -> Option<&'static str> {
        Some("codex-acp")
    }

    fn resume_rejected(&self, text: &str) -> bool {
        let t = text.to_ascii_lowercase();
        // 0.169: "thread/resume failed: no rollout found for thread id ..."
        t.contains("no rollout found")
            || (t.contains("session") || t.contains("thread") || t.contains("rollout"))
                && (t.contains("not found")
                    || t.contains("no such")
                    || t.contains("does not exist"))
    }

    fn complete(&self, summary: &mut Summary, config: &CliConfig) {
        if summary.model.is_none() {
            summary.model = config.model.clone();
        }
        if summary.usage.cost_usd.is_none() {
            summary.usage.cost_usd = summary
                .model
                .as_deref()
                .and_then(|m| price(m, &summary.usage));
        }
    }
}

/// Codex takes extra instructions from one file: the agent's own file and
/// the Paperclip skill are joined into the agent's scratch dir.
fn instructions_file(run: &RunSpec<'_, CodexExtra>) -> std::io::Result<Option<std::path::PathBuf>> {
    let mut text = String::new();
    if let Some(file) = &run.config.instructions_file {
        text.push_str(&std::fs::read_to_string(file)?);
        text.push_str("\n\n");
    }
    if let Some(skills) = run.skills_dir {
        if let Ok(skill) = std::fs::read_to_string(skills.join("paperclip").join("SKILL.md")) {
            text.push_str(&skill);
        }
        text.extend(super::skill_index::company_skills_note(skills));
    }
    if text.trim().is_empty() {
        return Ok(None);
    }
    let path = run.scratch.join("instructions.md");
    std::fs::write(&path, text)?;
    Ok(Some(path))
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// USD per million tokens: uncached input, cached input, output.
const RATES: &[(&str, f64, f64, f64)] = &[
    ("gpt-5-nano", 0.05, 0.005, 0.4),
    ("gpt-5-mini", 0.25, 0.025, 2.0),
    ("gpt-5", 1.25, 0.125, 10.0),
    ("gpt-4.1-mini", 0.4, 0.1, 1.6),
    ("gpt-4.1", 2.0, 0.5, 8.0),
    ("o4-mini", 1.1, 0.275, 4.4),
    ("o3", 2.0, 0.5, 8.0),
];

/// The price of `usage` on `model`, matching the longest known prefix
/// (`gpt-5-codex` is priced as `gpt-5`).
pub fn price(model: &str, usage: &Usage) -> Option<f64> {
    let (_, input, cached, output) = RATES
        .iter()
        .filter(|(prefix, ..)| {
            model == *prefix
                || model.starts_with(&format!("{prefix}-"))
                || model.starts_with(&format!("{prefix}."))
        })
        .max_by_key(|(prefix, ..)| prefix.len())?;
    let m = 1_000_000.0;
    Some(
        usage.input_tokens as f64 * input / m
            + usage.cached_input_tokens as f64 * cached / m
            + usage.output_tokens as f64 * output / m,
    )
}

#[derive(Default)]
pub struct CodexParser {
    summary: Summary,
}

impl StreamParser for CodexParser {
    fn line(&mut self, line: &str) -> Vec<Item> {
        let Some(v) = json_line(line, &mut self.summary) else {
            return Vec::new();
        };
        let s = &mut self.summary;
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => {
                s.session_id = str_at(&v, &["thread_id"]).or(s.session_id.take());
                vec![Item::Init {
                    session_id: s.session_id.clone(),
                    model: None,
                    tools: Vec::new(),
                }]
            }
            "item.started" => match v.get("item") {
                Some(item) if str_at(item, &["type"]).as_deref() == Some("command_execution") => {
                    vec![Item::ToolCall {
                        id: str_at(item, &["id"]).unwrap_or_default(),
                        name: "shell".into(),
                        input: serde_json::json!({"command": str_at(item, &["command"])}),
                    }]
                }
                _ => Vec::new(),
            },
            "item.completed" => v.get("item").map(completed_item).unwrap_or_default(),
            // Codex's own token report (its rollout's `event_msg` payload,
            // or bare): the last request's tokens and the account's windows.
            "token_count" | "event_msg" => {
                token_count(s, v.get("payload").unwrap_or(&v));
                Vec::new()
            }
            "turn.completed" => {
                s.completed = true;
                let u = v.get("usage").cloned().unwrap_or(Value::Null);
                let input = u64_at(&u, &["input_tokens"]);
                let cached = u64_at(&u, &["cached_input_tokens"]);
                // Without a `token_count`, the turn's usage is what the
                // session grew to: exact for a one-request turn, an upper
                // bound when the turn made several (their inputs overlap).
                if s.context_tokens.is_none() && input > 0 {
                    s.context_tokens = Some(input + u64_at(&u, &["output_tokens"]));
                }
                s.usage.add(&Usage {
                    input_tokens: input.saturating_sub(cached),
                    cached_input_tokens: cached,
                    output_tokens: u64_at(&u, &["output_tokens"]),
                    cost_usd: None,
                });
                Vec::new()
            }
            "turn.failed" => {
                let message = str_at(&v, &["error", "message"]).unwrap_or_else(|| v.to_string());
                s.error = Some(message.clone());
                vec![Item::Error { message }]
            }
            "error" => {
                let message = str_at(&v, &["message"]).unwrap_or_else(|| v.to_string());
                // Reconnect notices arrive as errors too; the turn's own
                // failure (turn.failed) is what decides the outcome.
                if s.error.is_none() && !message.to_ascii_lowercase().contains("reconnecting") {
                    s.error = Some(message.clone());
                }
                vec![Item::Error { message }]
            }
            _ => Vec::new(),
        }
    }

    fn running(&self) -> (Option<&str>, &Usage) {
        (self.summary.model.as_deref(), &self.summary.usage)
    }

    /// `codex exec` runs one turn: its `turn.completed` is the run's end.
    fn finished(&self) -> bool {
        self.summary.completed
    }

    fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        // A later successful turn supersedes a transient error.
        if s.completed
            && s.error
                .as_deref()
                .is_some_and(|e| e.to_ascii_lowercase().contains("retry"))
        {
            s.error = None;
        }
        s
    }
}

fn token_count(s: &mut Summary, v: &Value) {
    if str_at(v, &["type"]).as_deref() != Some("token_count") {
        return;
    }
    if let Some(last) = v.pointer("/info/last_token_usage") {
        let total = last
            .get("total_tokens")
            .and_then(Value::as_u64)
            .unwrap_or_else(|| u64_at(last, &["input_tokens"]) + u64_at(last, &["output_tokens"]));
        if total > 0 {
            s.context_tokens = Some(total);
        }
    }
    if let Some(limits) = v.get("rate_limits").filter(|r| r.is_object()) {
        let now = chrono::Utc::now().timestamp();
        for window in super::quota::codex_windows(limits, now) {
            s.report_window(window);
        }
    }
}

fn completed_item(item: &Value) -> Vec<Item> {
    let id = str_at(item, &["id"]).unwrap_or_default();
    match str_at(item, &["type"]).as_deref() {
        Some("agent_message") => str_at(item, &["text"])
            .map(|text| vec![Item::Assistant { text }])
            .unwrap_or_default(),
        Some("command_execution") => {
            let exit = item.get("exit_code").and_then(Value::as_i64);
            vec![Item::ToolResult {
                id,
                output: str_at(item, &["aggregated_output"]).unwrap_or_default(),
                is_error: exit.is_some_and(|c| c != 0)
                    || str_at(item, &["status"]).as_deref() == Some("failed"),
            }]
        }
        Some("file_change") => {
            let changes: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .map(|ch| {
                            format!(
                                "{} {}",
                                str_at(ch, &["kind"]).unwrap_or_default(),
                                str_at(ch, &["path"]).unwrap_or_default()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            vec![
                Item::ToolCall {
                    id: id.clone(),
                    name: "file_change".into(),
                    input: serde_json::json!({"path": changes.join(", "), "changes": item.get("changes")}),
                },
                Item::ToolResult {
                    id,
                    output: changes.join("\n"),
                    is_error: str_at(item, &["status"]).as_deref() == Some("failed"),
                },
            ]
        }
        Some("error") => vec![Item::Error {
            message: str_at(item, &["message"]).unwrap_or_default(),
        }],
        Some("context_compaction") => vec![Item::Compacted {
            trigger: Some("auto".into()),
            pre_tokens: None,
            post_tokens: None,
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_codex_keys_are_known_and_others_named() {
        let good = serde_json::json!({
            "cwd": "/tmp", "model": "gpt-5", "modelReasoningEffort": "high", "search": true,
            "fastMode": true, "dangerouslyBypassApprovalsAndSandbox": true, "command": "codex",
            "configOverrides": { "a.b": "1" }, "outputInactivityTimeoutMs": 60000,
            "env": { "OPENAI_API_KEY": "" }, "timeoutSec": 0, "graceSec": 15, "engine": "acp",
            "args": ["--x"],
        });
        let adapter = super::super::CliAdapter::new(Codex);
        crate::config::assert_keys(&adapter, good, "effort");
    }

    #[test]
    fn token_count_gives_context_and_windows_and_compaction_a_divider() {
        let mut p = CodexParser::default();
        // A rollout line of codex 0.1x (`event_msg` / `token_count`).
        p.line(r#"{"timestamp":"2026-12-07T17:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250000,"cached_input_tokens":200000,"output_tokens":900,"total_tokens":250900},"last_token_usage":{"input_tokens":150000,"cached_input_tokens":140000,"output_tokens":300,"total_tokens":150300},"model_context_window":272000},"rate_limits":{"primary":{"used_percent":78.0,"window_minutes":300,"resets_at":1796666232},"secondary":{"used_percent":20.0,"window_minutes":10080,"resets_at":1796921832}}}}"#);
        let items =
            p.line(r#"{"type":"item.completed","item":{"id":"i9","type":"context_compaction"}}"#);
        p.line(r#"{"type":"turn.completed","usage":{"input_tokens":999999,"cached_input_tokens":0,"output_tokens":1}}"#);
        let s = p.summary();
        assert_eq!(
            s.context_tokens,
            Some(150_300),
            "token_count wins over the turn"
        );
        assert_eq!(s.quota.len(), 2);
        assert_eq!(s.quota[0].label, "5h");
        assert_eq!(s.quota[0].used_percent, Some(78.0));
        assert!(matches!(items[0], Item::Compacted { .. }));
        let mut bare = CodexParser::default();
        bare.line(r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":1000,"output_tokens":30}}"#);
        assert_eq!(bare.summary().context_tokens, Some(1230));
    }

    #[test]
    fn a_turn_gives_thread_commands_and_usage() {
        let mut p = CodexParser::default();
        let lines = [
            r#"{"type":"thread.started","thread_id":"th-1"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"bash -lc 'echo hi'","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"bash -lc 'echo hi'","aggregated_output":"hi\n","exit_code":0,"status":"completed"}}"#,
            r#"{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"Done"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"output_tokens":50}}"#,
        ];
        let items: Vec<Item> = lines.iter().flat_map(|l| p.line(l)).collect();
        assert_eq!(items.len(), 4);
        let s = p.summary();
        assert!(s.completed);
        assert_eq!(s.session_id.as_deref(), Some("th-1"));
        assert_eq!(s.usage.input_tokens, 600);
        assert_eq!(s.usage.cached_input_tokens, 400);
    }

    #[test]
    fn a_failed_turn_keeps_its_message() {
        let mut p = CodexParser::default();
        p.line(r#"{"type":"turn.failed","error":{"message":"unexpected status 404 Not Found: model_not_found"}}"#);
        assert_eq!(
            p.summary().error.as_deref(),
            Some("unexpected status 404 Not Found: model_not_found")
        );
        assert!(!p.summary().completed);
    }

    #[test]
    fn a_lost_thread_is_a_rejected_resume() {
        let text = "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2 (code -32600)";
        assert!(Codex.resume_rejected(text));
        assert!(!Codex.resume_rejected("Error: unexpected status 500"));
    }

    #[test]
    fn known_models_are_priced_and_others_are_not() {
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cost_usd: None,
        };
        assert_eq!(price("gpt-5", &usage), Some(1.25 + 0.125 + 10.0));
        assert_eq!(price("gpt-5-codex", &usage), Some(1.25 + 0.125 + 10.0));
        assert_eq!(price("gpt-5-mini", &usage), Some(0.25 + 0.025 + 2.0));
        assert_eq!(price("gpt-6.1-sol", &usage), None);
        assert_eq!(price("o3-pro-x", &usage), Some(2.0 + 0.5 + 8.0));
    }
}

#[cfg(test)]
mod build_tests {
    use super::*;
    use crate::cli::CliConfig;
    use std::time::Duration;

    #[test]
    fn the_command_line_puts_global_flags_first_and_resume_last() {
        let config = CliConfig {
            command: "codex".into(),
            cwd: None,
            env: BTreeMap::new(),
            model: Some("gpt-5".into()),
            extra_args: vec![],
            instructions_file: None,
            timeout: None,
            grace: Duration::from_secs(1),
        };
        let extra = CodexExtra {
            bypass: true,
            search: true,
            reasoning_effort: None,
            overrides: BTreeMap::from([("model_verbosity".to_string(), "\"low\"".to_string())]),
        };
        let scratch = std::env::temp_dir();
        let run = RunSpec {
            config: &config,
            extra: &extra,
            prompt: "hi",
            session_id: Some("th-9"),
            cwd: &scratch,
            skills_dir: None,
            scratch: &scratch,
        };
        let args = Codex.build(&run).unwrap().args;
        assert_eq!(
            &args[..4],
            ["--search", "exec", "--json", "--skip-git-repo-check"]
        );
        assert!(args.contains(&"--dangerously-bypass-approvals-and-sandbox".to_string()));
        assert!(args.contains(&"model_verbosity=\"low\"".to_string()));
        assert_eq!(&args[args.len() - 3..], ["resume", "th-9", "-"]);
    }
}
