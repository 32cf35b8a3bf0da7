//! The Agent Client Protocol as an engine: `engine: "acp"` on
//! `claude_local`, `codex_local` and `gemini_local` runs the agent's ACP
//! bridge (`claude-code-acp`, `codex-acp`, `gemini --acp`, or
//! `agentCommand`) and speaks JSON-RPC with it over stdio, natively: no
//! ACP crate (see `rpc.rs` for why a small loop is enough). The run gets
//! what the CLI engine's gets (env, working directory, prompt, session,
//! skills, confinement) and reports the same transcript events, usage and
//! session, so the board shows both alike. `acpx_local`, which upstream
//! retired, runs here on this engine.

pub mod acpx;
mod memory;
mod rpc;
mod session;
pub mod settings;
mod updates;

use std::sync::Arc;

use serde_json::json;

pub use settings::{Engine, Settings};
pub use updates::{NonInteractive, PermissionMode};

use crate::cli::stream::Summary;
use crate::cli::{CliAdapter, CliConfig, CliKind};
use crate::config::{describe, truncate};
use crate::process::{self, Spawn, Stop};
use crate::{CancellationToken, ErrorCode, Invocation, Outcome, OutcomeStatus, RunSink, Stream};

/// Whether this run goes through ACP: `engine: "acp"`, or `"auto"` with
/// the agent's ACP command installed (else the CLI, said in the log).
pub(crate) fn chosen(
    acp_command: Option<&'static str>,
    inv: &Invocation,
    sink: &dyn RunSink,
) -> bool {
    let Some(default) = acp_command else {
        return false;
    };
    let s = Settings::of(&inv.config);
    match s.engine {
        Some(Engine::Acp) => true,
        Some(Engine::Auto) => {
            let command = s.command.unwrap_or_else(|| words(default));
            let path = inv
                .config
                .pointer("/env/PATH")
                .and_then(|p| p.as_str())
                .or_else(|| inv.env.get("PATH").map(String::as_str));
            let found =
                crate::environment::resolve_command(&command[0], path, &inv.default_cwd).is_some();
            if !found {
                sink.log(
                    Stream::System,
                    &format!(
                        "[paperclip] engine auto: `{}` is not installed; running the CLI engine\n",
                        command[0]
                    ),
                );
            }
            found
        }
        _ => false,
    }
}

fn words(command: &str) -> Vec<String> {
    settings::split_command(command).unwrap_or_else(|| vec![command.to_string()])
}

/// Who is run and how its usage is read.
pub(crate) struct Agent {
    /// The adapter type failures are reported under.
    pub name: &'static str,
    /// The agent's CLI kind (`claude_local`, ...) for its credentials and
    /// how it is told a model.
    pub kind: &'static str,
    pub command: Vec<String>,
    pub provider: String,
    /// Fills in what the agent does not report (a price for its tokens).
    pub complete: Complete,
}

/// Fills in a summary what the agent left out (a CLI kind's `complete`).
pub(crate) type Complete = Box<dyn Fn(&mut Summary, &CliConfig) + Send + Sync>;

/// A run of a CLI adapter on the ACP engine.
pub(crate) async fn run<K: CliKind>(
    adapter: &CliAdapter<K>,
    inv: Invocation,
    sink: Arc<dyn RunSink>,
) -> Outcome {
    let cfg = match adapter.parse_config(&inv.config) {
        Ok((cfg, _)) => cfg,
        Err(errors) => return Outcome::failed(ErrorCode::SpawnFailed, describe(&errors)),
    };
    let kind = adapter.cli().clone();
    let settings = Settings::of(&inv.config);
    let default = kind.acp_command().unwrap_or_default();
    let agent = Agent {
        name: kind.kind(),
        kind: kind.kind(),
        command: settings.command.clone().unwrap_or_else(|| words(default)),
        provider: kind.provider(cfg.model.as_deref()).to_string(),
        complete: Box::new(move |s, c| kind.complete(s, c)),
    };
    run_agent(agent, cfg, settings, inv, sink).await
}

pub(crate) async fn run_agent(
    agent: Agent,
    cfg: CliConfig,
    settings: Settings,
    inv: Invocation,
    sink: Arc<dyn RunSink>,
) -> Outcome {
    let cwd = match process::working_dir(cfg.cwd.as_deref(), &inv.default_cwd).await {
        Ok(cwd) => cwd,
        Err(message) => return Outcome::failed(ErrorCode::InvalidWorkingDirectory, message),
    };
    let mut env = process::merged_env(&inv.env, &cfg.env);
    let Some(program) = crate::environment::resolve_command(
        &agent.command[0],
        env.get("PATH").map(String::as_str),
        &cwd,
    ) else {
        return Outcome::failed(
            ErrorCode::AdapterNotInstalled,
            format!(
                "{} on the ACP engine: `{}` was not found on PATH ({}, or set adapterConfig.agentCommand)",
                agent.name,
                agent.command[0],
                install_hint(agent.kind)
            ),
        );
    };
    let scratch = inv
        .default_cwd
        .parent()
        .unwrap_or(&inv.default_cwd)
        .join(".paperclip")
        .join(&inv.agent_id)
        .join(agent.kind);
    let state_dir = settings
        .state_dir
        .clone()
        .unwrap_or_else(|| scratch.join("acp"));
    if let Err(e) = std::fs::create_dir_all(&state_dir) {
        return Outcome::failed(
            ErrorCode::SpawnFailed,
            format!("cannot create {}: {e}", state_dir.display()),
        );
    }
    // Claude's and Gemini's bridges take their model from the environment
    // (upstream's lesson: gemini 0.61 has no session/set_config_option).
    let mut model_in_session = cfg.model.clone();
    if let (Some(model), Some(var)) = (&cfg.model, model_var(agent.kind)) {
        if !cfg.env.contains_key(var) {
            env.insert(var.to_string(), model.clone());
        }
        model_in_session = None;
    }
    let preamble = match preamble(&cfg, inv.skills_dir.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            return Outcome::failed(
                ErrorCode::SpawnFailed,
                format!("reading the agent's instructions: {e}"),
            )
        }
    };
    let spawn = Spawn {
        program: program.display().to_string(),
        args: agent.command[1..].to_vec(),
        cwd: cwd.clone(),
        env,
        inherit: crate::detect::key_var(agent.kind).into_iter().collect(),
        // Piped and kept open: the conversation is fed through it.
        stdin: Some(String::new()),
        timeout: cfg.timeout,
        grace: cfg.grace,
        stop_now: inv.stop_now.clone(),
        confine: crate::confine::request(
            &inv.config,
            agent.name,
            vec![scratch.clone(), state_dir.clone()],
            inv.skills_dir
                .iter()
                .chain(&cfg.instructions_file)
                .cloned()
                .collect(),
        ),
    };
    let plan = session::Plan {
        cwd,
        prompt: inv.prompt.clone().unwrap_or_default(),
        preamble,
        session_id: inv.session_id.clone(),
        model: model_in_session,
        configured_model: cfg.model.clone(),
        settings: settings.clone(),
        state_dir,
        grace: cfg.grace,
        full_access: [
            "dangerouslyBypassApprovalsAndSandbox",
            "dangerouslySkipPermissions",
        ]
        .iter()
        .any(|k| inv.config.get(*k) == Some(&json!(true))),
    };
    let (to_agent, feed) = tokio::sync::mpsc::unbounded_channel();
    let (from_tx, from_agent) = tokio::sync::mpsc::unbounded_channel();
    let tap = Box::new(rpc::StdoutTap::new(from_tx));
    // Ours to stop the process: after its turn, or a cancel's grace.
    let kill = CancellationToken::new();
    let driver = session::Driver::new(
        rpc::Connection::new(to_agent, from_agent),
        sink.clone(),
        plan,
    );
    let (exit, report) = tokio::join!(
        process::execute_fed(&spawn, &kill, sink.clone(), Some(tap), Some(feed)),
        driver.drive(&inv.cancel, &inv.stop_now, &kill),
    );
    judge(&agent, &cfg, &settings, exit, report)
}

fn model_var(kind: &str) -> Option<&'static str> {
    match kind {
        "claude_local" => Some("ANTHROPIC_MODEL"),
        "gemini_local" => Some("GEMINI_MODEL"),
        _ => None,
    }
}

/// ACP has no system prompt: a fresh session's first prompt opens with the
/// agent's instructions file and the Paperclip skill (as Codex's
/// instructions file carries them on the CLI engine).
fn preamble(cfg: &CliConfig, skills: Option<&std::path::Path>) -> std::io::Result<Option<String>> {
    let mut text = String::new();
    if let Some(file) = &cfg.instructions_file {
        text.push_str(&std::fs::read_to_string(file)?);
        text.push_str("\n\n");
    }
    if let Some(skills) = skills {
        if let Ok(skill) = std::fs::read_to_string(skills.join("paperclip").join("SKILL.md")) {
            text.push_str(&skill);
        }
    }
    Ok((!text.trim().is_empty()).then_some(text))
}

fn install_hint(kind: &str) -> &'static str {
    match kind {
        "claude_local" => "npm install -g @zed-industries/claude-code-acp",
        "codex_local" => "npm install -g @zed-industries/codex-acp",
        "gemini_local" => "npm install -g @google/gemini-cli",
        _ => "install the agent's ACP bridge",
    }
}

fn judge(
    agent: &Agent,
    cfg: &CliConfig,
    settings: &Settings,
    exit: Result<process::Exit, Outcome>,
    report: session::Report,
) -> Outcome {
    let mut summary = Summary {
        session_id: report.session_id.clone(),
        model: report.model.clone().or_else(|| cfg.model.clone()),
        usage: report.usage.clone(),
        ..Summary::default()
    };
    if !summary.usage.is_empty() {
        (agent.complete)(&mut summary, cfg);
        // gemini's CLI stream prices each turn as it is parsed; over ACP
        // the tokens come once, at the end, with the model that answered.
        if summary.usage.cost_usd.is_none() && agent.kind == "gemini_local" {
            if let Some(model) = &summary.model {
                summary.usage.cost_usd = crate::cli::gemini::price(model, &summary.usage);
            }
        }
    }
    let name = agent.name;
    let mut out = match exit {
        Err(outcome) => outcome,
        Ok(exit) => {
            let tail = exit.stderr_tail.clone().unwrap_or_default();
            let timed_out = matches!(exit.stopped, Some((Stop::Timeout, _)));
            let mut out = if report.cancelled {
                Outcome::ended(OutcomeStatus::Cancelled, ErrorCode::Cancelled, "cancelled")
            } else if timed_out {
                Outcome::ended(
                    OutcomeStatus::TimedOut,
                    ErrorCode::Timeout,
                    format!(
                        "timed out after {}s",
                        cfg.timeout.unwrap_or_default().as_secs_f64()
                    ),
                )
            } else if let Some((code, said)) = &report.error {
                let all = format!("{said}\n{tail}");
                let code = code
                    .or_else(|| crate::cli::classify::classify(&all))
                    .unwrap_or(ErrorCode::NonzeroExit);
                Outcome::failed(code, format!("{name} (ACP): {}", truncate(said, 1000)))
            } else if report.answered {
                match report.stop_reason.as_deref() {
                    Some("end_turn") | None => Outcome::succeeded(),
                    Some(reason) => Outcome::failed(
                        ErrorCode::NonzeroExit,
                        format!(
                            "{name} (ACP) ended its turn without finishing: stop reason {reason}"
                        ),
                    ),
                }
            } else {
                let code = crate::cli::classify::classify(&tail).unwrap_or(ErrorCode::NonzeroExit);
                let status = match exit.status.code() {
                    Some(c) => format!("exit code {c}"),
                    None => "killed by a signal".into(),
                };
                Outcome::failed(
                    code,
                    format!(
                        "{name} (ACP) exited before answering ({status}): {}",
                        truncate(tail.trim(), 1000)
                    ),
                )
            };
            // Stopped by us after its turn is no failure of its own.
            if report.cancelled || timed_out {
                out.exit_code = exit.status.code();
                out.signal = exit.stopped.map(|(_, s)| s.to_string());
            } else if exit.stopped.is_none() {
                out.exit_code = exit.status.code();
            }
            out
        }
    };
    if !summary.usage.is_empty() {
        let u = &summary.usage;
        out.usage = Some(json!({
            "provider": agent.provider,
            "model": summary.model,
            "inputTokens": u.input_tokens,
            "cachedInputTokens": u.cached_input_tokens,
            "outputTokens": u.output_tokens,
            "costUsd": u.cost_usd,
        }));
    }
    out.result = Some(json!({
        "sessionId": summary.session_id,
        "text": report.text,
        "stopReason": report.stop_reason,
        "engine": "acp",
        "contextTokens": report.context.map(|c| c.0),
        "contextWindow": report.context.map(|c| c.1),
    }));
    if !settings.oneshot {
        out.session_id = summary.session_id;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Lines(Mutex<String>);

    impl RunSink for Lines {
        fn log(&self, _stream: Stream, chunk: &str) {
            self.0.lock().unwrap().push_str(chunk);
        }
        fn event(&self, _: &str, _: &str, _: &str, _: serde_json::Value) {}
        fn process_started(&self, _: u32, _: u32) {}
    }

    fn invocation(config: serde_json::Value, path: &std::path::Path) -> Invocation {
        Invocation {
            run_id: "r".into(),
            agent_id: "a".into(),
            agent_name: "A".into(),
            company_id: "c".into(),
            config,
            env: [("PATH".to_string(), path.display().to_string())].into(),
            prompt: None,
            context: serde_json::Value::Null,
            default_cwd: path.to_path_buf(),
            cancel: CancellationToken::new(),
            stop_now: CancellationToken::new(),
            session_id: None,
            skills_dir: None,
        }
    }

    #[test]
    fn the_engine_is_chosen_by_config_and_auto_by_what_is_installed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("acp-engine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sink = Lines::default();
        let run = |config| chosen(Some("fake-acp --stdio"), &invocation(config, &dir), &sink);
        assert!(!run(json!({})), "unset keeps the CLI engine");
        assert!(!run(json!({"engine": "cli"})));
        assert!(
            run(json!({"engine": "acp"})),
            "acp even when missing: the run says so"
        );
        assert!(!run(json!({"engine": "auto"})));
        assert!(sink
            .0
            .lock()
            .unwrap()
            .contains("`fake-acp` is not installed; running the CLI engine"));
        let bin = dir.join("fake-acp");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(run(json!({"engine": "auto"})));
        // A kind without an ACP bridge never runs on the engine.
        assert!(!chosen(
            None,
            &invocation(json!({"engine": "acp"}), &dir),
            &sink
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
