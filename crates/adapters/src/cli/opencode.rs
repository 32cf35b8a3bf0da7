//! `adapterType: "opencode_local"`: OpenCode, `opencode run --format json`.
//! OpenCode prices the models it knows in its `step_finish` parts.
//!
//! The instructions and the Paperclip skill reach OpenCode through
//! `OPENCODE_CONFIG_CONTENT`, the variable an agent hired on a local model
//! also carries its provider in: the agent's is kept and ours merged into it
//! (see [`merge`]), since the agent's `env` would otherwise replace ours.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::stream::{json_line, str_at, u64_at, Item, StreamParser, Summary, Usage};
use super::{Built, CliConfig, CliKind, Prepared, RunSpec};
use crate::config::{Fields, KnownKeys};
use crate::{ErrorCode, Outcome};

/// A whole OpenCode config, which OpenCode merges over its config files.
pub const CONFIG_VAR: &str = "OPENCODE_CONFIG_CONTENT";

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

    /// The model's `provider/` prefix: whoever serves it bills it, so a
    /// local server's tokens are counted under its own name (`ollama`).
    /// OpenCode's own gateway and an odd name are `opencode`.
    fn provider(&self, model: Option<&str>) -> &'static str {
        match model.and_then(|m| m.split_once('/')).map(|(p, _)| p) {
            Some("anthropic") => "anthropic",
            Some("openai") => "openai",
            Some("google") => "google",
            Some("openrouter") => "openrouter",
            // `intern` answers `pi` for a name it will not keep.
            Some(p) if p != "pi" => match super::pi::intern(p) {
                "pi" => "opencode",
                name => name,
            },
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
        // Checked here so a config OpenCode could not read is refused at
        // hire rather than failing every run (a secret's value is checked
        // as the run starts).
        let content = match f.get("env").and_then(|e| e.get(CONFIG_VAR)) {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(Value::Object(o)) if o.get("type").and_then(Value::as_str) == Some("plain") => {
                o.get("value").and_then(Value::as_str)
            }
            _ => None,
        };
        if let Some(Err(why)) = content.map(read_config) {
            f.error(&["env", CONFIG_VAR], why);
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
        // OpenCode merges it over the user's own config files, so their
        // providers and keys still apply.
        if let Some(own) = own_config(run) {
            env.insert(CONFIG_VAR.into(), own.to_string());
        }
        Ok(Built {
            args,
            prompt_on_stdin: true,
            env,
            notes: Vec::new(),
        })
    }

    /// The agent's own `OPENCODE_CONFIG_CONTENT` (secrets resolved) has
    /// replaced ours in `env`: ours is merged back into it.
    fn prepare(
        &self,
        run: &RunSpec<'_, OpenCodeExtra>,
        _args: &[String],
        env: &mut BTreeMap<String, String>,
    ) -> Result<Prepared, Box<Outcome>> {
        let (Some(own), Some(raw)) = (own_config(run), env.get(CONFIG_VAR)) else {
            return Ok(Prepared::default());
        };
        if serde_json::from_str::<Value>(raw).is_ok_and(|v| v == own) {
            return Ok(Prepared::default());
        }
        let mut theirs = read_config(raw).map_err(|why| {
            Box::new(Outcome::failed(
                ErrorCode::SpawnFailed,
                format!("env.{CONFIG_VAR} {why}"),
            ))
        })?;
        merge(&mut theirs, own);
        env.insert(CONFIG_VAR.into(), theirs.to_string());
        Ok(Prepared {
            notes: vec![format!(
                "{CONFIG_VAR}: the agent's own, with Paperclip's instructions added"
            )],
            ..Prepared::default()
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
        // OpenCode reports 0 for a model it has no price for: a zero is a
        // price only when the agent's config declares the model's cost (a
        // local model hired at $0), otherwise the cost is unknown.
        if summary.usage.cost_usd == Some(0.0) {
            let declared = summary.model.as_deref().is_some_and(|model| {
                config
                    .env
                    .get(CONFIG_VAR)
                    .and_then(|raw| read_config(raw).ok())
                    .is_some_and(|c| declares_cost(&c, model))
            });
            if !declared {
                summary.usage.cost_usd = None;
            }
        }
    }
}

/// What the adapter must set in OpenCode's config: the instructions files
/// (the agent's own, then the Paperclip skill); `None` when there are none.
fn own_config(run: &RunSpec<'_, OpenCodeExtra>) -> Option<Value> {
    let mut instructions = Vec::new();
    if let Some(file) = &run.config.instructions_file {
        instructions.push(file.display().to_string());
    }
    if let Some(skills) = run.skills_dir {
        let skill = skills.join("paperclip").join("SKILL.md");
        instructions.push(skill.display().to_string());
        let company = super::skill_index::company_skill_files(skills);
        instructions.extend(company.iter().map(|f| f.display().to_string()));
    }
    (!instructions.is_empty()).then(|| serde_json::json!({ "instructions": instructions }))
}

fn read_config(raw: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(raw) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err("must be a JSON object (an OpenCode config)".into()),
        Err(e) => Err(format!("is not JSON: {e}")),
    }
}

/// Merges `ours` into `theirs`: objects key by key, lists joined without
/// repeats (as OpenCode joins `instructions` across its config files), and
/// elsewhere ours wins, since it only holds what the adapter must set.
pub fn merge(theirs: &mut Value, ours: Value) {
    match (theirs, ours) {
        (Value::Object(t), Value::Object(o)) => {
            for (k, v) in o {
                match t.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        t.insert(k, v);
                    }
                }
            }
        }
        (Value::Array(t), Value::Array(o)) => {
            for v in o {
                if !t.contains(&v) {
                    t.push(v);
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// Whether `config` gives `provider/model` a `cost`.
fn declares_cost(config: &Value, model: &str) -> bool {
    let Some((provider, id)) = model.split_once('/') else {
        return false;
    };
    config
        .get("provider")
        .and_then(|p| p.get(provider))
        .and_then(|p| p.get("models"))
        .and_then(|m| m.get(id))
        .and_then(|m| m.get("cost"))
        .and_then(Value::as_object)
        .is_some_and(|cost: &Map<String, Value>| !cost.is_empty())
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
                    // A zero is kept for `complete` to judge.
                    cost_usd: part.get("cost").and_then(Value::as_f64),
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

    /// What `local_models::agent_config` writes for a model at $0.
    fn local_content() -> String {
        serde_json::json!({
            "provider": { "ollama": { "npm": "@ai-sdk/openai-compatible",
                "options": { "baseURL": "http://127.0.0.1:11434/v1", "apiKey": "ollama" },
                "models": { "qwen3:8b": { "name": "qwen3:8b", "cost": { "input": 0, "output": 0 } } } } },
            "model": "ollama/qwen3:8b",
            "instructions": ["/home/me/STYLE.md"],
        })
        .to_string()
    }

    #[test]
    fn the_agents_config_content_keeps_its_provider_and_gains_the_instructions() {
        let adapter = super::super::CliAdapter::new(OpenCode);
        let (config, extra) = adapter
            .parse_config(&serde_json::json!({ "model": "ollama/qwen3:8b",
                "instructionsFilePath": "/a/AGENTS.md",
                "env": { CONFIG_VAR: local_content() } }))
            .unwrap();
        let skills = std::path::Path::new("/s");
        let run = RunSpec {
            config: &config,
            extra: &extra,
            prompt: "go",
            session_id: None,
            cwd: std::path::Path::new("/tmp"),
            skills_dir: Some(skills),
            scratch: std::path::Path::new("/tmp"),
        };
        // As the runner does: the agent's env over the built one.
        let mut env = OpenCode.build(&run).unwrap().env;
        env.extend(config.env.clone());
        let prepared = OpenCode.prepare(&run, &[], &mut env).unwrap();
        assert_eq!(prepared.notes.len(), 1);
        let merged: Value = serde_json::from_str(&env[CONFIG_VAR]).unwrap();
        assert_eq!(merged["model"], "ollama/qwen3:8b");
        assert_eq!(
            merged["provider"]["ollama"]["options"]["baseURL"],
            "http://127.0.0.1:11434/v1"
        );
        assert_eq!(
            merged["instructions"],
            serde_json::json!(["/home/me/STYLE.md", "/a/AGENTS.md", "/s/paperclip/SKILL.md"])
        );
        // Merging again adds nothing; with no agent's content ours stands.
        let mut again = merged.clone();
        merge(&mut again, own_config(&run).unwrap());
        assert_eq!(again, merged);
        let (plain, extra) = adapter.parse_config(&serde_json::json!({})).unwrap();
        let run = RunSpec {
            config: &plain,
            extra: &extra,
            ..run
        };
        let mut env = OpenCode.build(&run).unwrap().env;
        assert!(OpenCode
            .prepare(&run, &[], &mut env)
            .unwrap()
            .notes
            .is_empty());
        assert_eq!(env[CONFIG_VAR], own_config(&run).unwrap().to_string());
        // Content OpenCode could not read is refused at hire, by its path.
        for bad in ["{not json", "[1]"] {
            let errors = adapter
                .parse_config(&serde_json::json!({ "env": { CONFIG_VAR: bad } }))
                .err()
                .unwrap();
            assert_eq!(errors[0].path, ["env", CONFIG_VAR], "{errors:?}");
        }
        let mut resolved = BTreeMap::from([(CONFIG_VAR.to_string(), "7".to_string())]);
        let out = OpenCode.prepare(&run, &[], &mut resolved).unwrap_err();
        assert_eq!(out.error_code, Some(ErrorCode::SpawnFailed));
    }

    #[test]
    fn the_model_prefix_bills_and_a_declared_zero_is_free() {
        let biller = |m: &str| OpenCode.provider(Some(m));
        assert_eq!(biller("ollama/qwen3:8b"), "ollama");
        assert_eq!(biller("lm-studio/qwen2.5-coder-7b"), "lm-studio");
        assert_eq!(biller("anthropic/claude-sonnet-4-5"), "anthropic");
        assert_eq!(biller("opencode/grok-code"), "opencode");
        assert_eq!(biller("we ird/m"), "opencode");
        assert_eq!(OpenCode.provider(None), "opencode");

        let adapter = super::super::CliAdapter::new(OpenCode);
        let zero = || Summary {
            usage: Usage {
                input_tokens: 10,
                cost_usd: Some(0.0),
                ..Usage::default()
            },
            ..Summary::default()
        };
        let (local, _) = adapter
            .parse_config(&serde_json::json!({ "model": "ollama/qwen3:8b",
                "env": { CONFIG_VAR: local_content() } }))
            .unwrap();
        let mut s = zero();
        OpenCode.complete(&mut s, &local);
        assert_eq!(s.usage.cost_usd, Some(0.0), "priced at zero by the hire");
        // The same model without a declared price: unknown, not free.
        let (bare, _) = adapter
            .parse_config(&serde_json::json!({ "model": "ollama/qwen3:8b" }))
            .unwrap();
        let mut s = zero();
        OpenCode.complete(&mut s, &bare);
        assert_eq!(s.usage.cost_usd, None);
        assert_eq!(s.model.as_deref(), Some("ollama/qwen3:8b"));
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
