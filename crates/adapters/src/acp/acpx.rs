//! `adapterType: "acpx_local"`: upstream's retired ACP adapter (a tombstone
//! there that fails every run). Its config is accepted unchanged and run on
//! the ACP engine: `agent` picks the bridge (claude, codex, gemini, or a
//! custom `agentCommand`), the rest means what it means on the engine.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::settings::{self, Settings};
use super::{words, Agent};
use crate::cli::claude::Claude;
use crate::cli::codex::Codex;
use crate::cli::{CliAdapter, CliConfig, CliKind, LOCAL_UPSTREAM_UNUSED};
use crate::config::{describe, Fields, KnownKeys, CONFINEMENT_KEYS};
use crate::environment::{self, Check, Level, Report};
use crate::{
    Adapter, BoxFuture, Capabilities, ConfigError, ErrorCode, Invocation, Outcome, RunLimits,
    RunSink,
};

pub struct AcpxAdapter;

/// Upstream's `acpx_local` keys this adapter reads (with the engine's).
const KEYS: &[&str] = &[
    "agent",
    "cwd",
    "env",
    "model",
    "instructionsFilePath",
    "promptTemplate",
    "timeoutSec",
    "graceSec",
];

/// Upstream's keys without effect here: `thinkingEffort` (no ACP method
/// sets it), `fastMode` and `command` (upstream's acpx CLI path).
const UNUSED: &[&str] = &["thinkingEffort", "fastMode", "command"];

const AGENTS: &[&str] = &["claude", "codex", "gemini", "custom"];

impl AcpxAdapter {
    fn parse(
        &self,
        config: &Value,
    ) -> Result<(&'static str, CliConfig, Settings), Vec<ConfigError>> {
        let mut f = Fields::new(config)?;
        let agent = match f.string("agent").map(|a| a.trim().to_ascii_lowercase()) {
            None => "claude",
            Some(a) if a.is_empty() => "claude",
            Some(a) => match AGENTS.iter().find(|x| **x == a) {
                Some(x) => x,
                None => {
                    f.error(&["agent"], "must be one of claude, codex, gemini, custom");
                    "claude"
                }
            },
        };
        let settings = Settings::read(&mut f);
        if agent == "custom" && settings.command.is_none() {
            f.error(
                &["agentCommand"],
                "is required when agent is custom (the ACP server's command line)",
            );
        }
        if settings.engine == Some(settings::Engine::Cli) {
            f.error(&["engine"], "acpx_local always runs on the ACP engine");
        }
        let mut errors = f.finish(()).err().unwrap_or_default();
        // The keys the CLI adapters share mean the same here.
        let mut common = config.clone();
        if let Value::Object(obj) = &mut common {
            obj.retain(|k, _| {
                !["agent", "command"].contains(&k.as_str()) && !UNUSED.contains(&k.as_str())
            });
        }
        match CliAdapter::new(Claude).parse_config(&common) {
            Ok((cfg, _)) if errors.is_empty() => Ok((agent, cfg, settings)),
            Ok(_) => Err(errors),
            Err(more) => {
                for e in more {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
                Err(errors)
            }
        }
    }
}

/// The agent `acpx_local`'s `agent` names.
fn agent_for(agent: &str, settings: &Settings) -> Agent {
    let (kind, default, provider): (&'static str, &str, &str) = match agent {
        "codex" => ("codex_local", "codex-acp", "openai"),
        "gemini" => ("gemini_local", "gemini --acp", "google"),
        "custom" => ("acpx_local", "", "unknown"),
        _ => ("claude_local", "claude-code-acp", "anthropic"),
    };
    let complete: super::Complete = match agent {
        "codex" => Box::new(|s, c| Codex.complete(s, c)),
        "claude" => Box::new(|s, c| Claude.complete(s, c)),
        _ => Box::new(|_, _| {}),
    };
    Agent {
        name: "acpx_local",
        kind,
        command: settings.command.clone().unwrap_or_else(|| words(default)),
        provider: provider.to_string(),
        complete,
    }
}

impl Adapter for AcpxAdapter {
    fn kind(&self) -> &'static str {
        "acpx_local"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cancellable: true,
            async_callback: false,
            sessions: true,
            needs_prompt: true,
        }
    }

    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        self.parse(config).map(|_| ())
    }

    fn known_keys(&self) -> KnownKeys {
        let engine: Vec<&'static str> = settings::KEYS
            .iter()
            .copied()
            .filter(|k| *k != "engine")
            .collect();
        KnownKeys::new(KEYS, UNUSED)
            .with(&engine, settings::UNUSED)
            .with(CONFINEMENT_KEYS, LOCAL_UPSTREAM_UNUSED)
    }

    fn limits(&self, config: &Value) -> RunLimits {
        self.parse(config)
            .map(|(_, c, _)| RunLimits {
                timeout: c.timeout,
                grace: c.grace,
                callback: None,
            })
            .unwrap_or_default()
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome> {
        crate::config::note_ignored(&self.known_keys(), "acpx_local", &invocation.config, &*sink);
        Box::pin(async move {
            let (agent, cfg, settings) = match self.parse(&invocation.config) {
                Ok(parsed) => parsed,
                Err(errors) => return Outcome::failed(ErrorCode::SpawnFailed, describe(&errors)),
            };
            let agent = agent_for(agent, &settings);
            super::run_agent(agent, cfg, settings, invocation, sink).await
        })
    }

    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        default_cwd: &'a Path,
    ) -> BoxFuture<'a, Report> {
        Box::pin(async move {
            let (agent, cfg, settings) = match self.parse(config) {
                Ok(parsed) => parsed,
                Err(errors) => {
                    return Report::new("acpx_local", environment::config_checks(Err(errors)))
                }
            };
            let mut checks = environment::config_checks(Ok(()));
            let cwd = environment::cwd_checks(cfg.cwd.as_deref(), default_cwd, &mut checks);
            let agent = agent_for(agent, &settings);
            let path = cfg.env.get("PATH").cloned();
            checks.push(
                match environment::resolve_command(&agent.command[0], path.as_deref(), &cwd) {
                    Some(p) => Check::new(
                        "command_found",
                        Level::Info,
                        format!("Found {} (runs on the ACP engine)", p.display()),
                    ),
                    None => Check::new(
                        ErrorCode::AdapterNotInstalled.as_str(),
                        Level::Error,
                        format!("`{}` is not installed or not on PATH", agent.command[0]),
                    )
                    .hint(format!(
                        "{}, or set agentCommand",
                        super::install_hint(agent.kind)
                    )),
                },
            );
            Report::new("acpx_local", checks)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstreams_acpx_config_is_accepted_and_mapped() {
        let upstream = json!({
            "agent": "codex", "mode": "persistent", "cwd": "/tmp", "model": "gpt-5",
            "thinkingEffort": "high", "permissionMode": "approve-all", "nonInteractivePermissions": "deny",
            "instructionsFilePath": "/tmp/AGENTS.md", "promptTemplate": "Do {{task.identifier}}",
            "bootstrapPromptTemplate": "x", "timeoutSec": 0, "graceSec": 15, "env": {"OPENAI_API_KEY": "k"},
        });
        let (agent, cfg, settings) = AcpxAdapter.parse(&upstream).unwrap();
        assert_eq!(agent, "codex");
        assert_eq!(cfg.model.as_deref(), Some("gpt-5"));
        assert_eq!(agent_for(agent, &settings).command, ["codex-acp"]);
        let known = AcpxAdapter.known_keys();
        assert!(
            upstream.as_object().unwrap().keys().all(|k| known.knows(k)),
            "{known:?}"
        );
        assert_eq!(
            known.ignored(&upstream),
            ["bootstrapPromptTemplate", "thinkingEffort"]
        );

        assert_eq!(
            agent_for("claude", &Settings::of(&json!({}))).command,
            ["claude-code-acp"]
        );
        assert_eq!(
            agent_for("gemini", &Settings::of(&json!({}))).command,
            ["gemini", "--acp"]
        );
        let custom = json!({"agent": "custom", "agentCommand": "my-acp serve"});
        let (agent, _, settings) = AcpxAdapter.parse(&custom).unwrap();
        assert_eq!(agent_for(agent, &settings).command, ["my-acp", "serve"]);

        let errors = AcpxAdapter
            .parse(&json!({"agent": "custom", "timeoutSec": -1}))
            .unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path[0].as_str()).collect();
        assert_eq!(paths, ["agentCommand", "timeoutSec"]);
        assert!(AcpxAdapter.parse(&json!({"agent": "cursor"})).is_err());
    }
}
