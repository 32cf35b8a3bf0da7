//! How each real CLI is pointed at the scripted provider, in a home of its
//! own so tests never read or write the user's `~/.claude`, `~/.codex`,
//! `~/.gemini` or OpenCode state.

use std::path::PathBuf;

use paperclip_scripted_provider::ScriptedProvider;
use serde_json::{json, Value};

pub struct Cli {
    pub kind: &'static str,
    /// A fresh directory holding the CLI's config and session state.
    pub home: PathBuf,
}

impl Cli {
    /// The CLI for `kind` if it is installed; `None` skips the test, except
    /// under `PAPERCLIP_REQUIRE_AGENT_CLIS=1`, where it panics.
    pub fn find(kind: &'static str) -> Option<Cli> {
        let bin = match kind {
            "claude_local" => "claude",
            "codex_local" => "codex",
            "opencode_local" => "opencode",
            "pi_local" => "pi",
            "gemini_local" => "gemini",
            _ => unreachable!(),
        };
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
            .unwrap_or(false);
        if !found {
            if std::env::var("PAPERCLIP_REQUIRE_AGENT_CLIS").as_deref() == Ok("1") {
                panic!("`{bin}` is not on PATH and PAPERCLIP_REQUIRE_AGENT_CLIS=1");
            }
            eprintln!("skipping: `{bin}` is not installed (npm install -g it, see .ci/run)");
            return None;
        }
        let home = std::env::temp_dir().join(format!(
            "paperclip-cli-home-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&home).unwrap();
        if kind == "opencode_local" {
            settle_opencode_plugin_deps(&home.join("config/opencode"));
        }
        Some(Cli { kind, home })
    }

    /// The agent's `adapterConfig` for this CLI against `provider`.
    pub fn config(&self, provider: &ScriptedProvider) -> Value {
        let home = self.home.display().to_string();
        let base = provider.base_url();
        match self.kind {
            "claude_local" => json!({
                "model": "claude-sonnet-4-5",
                "dangerouslySkipPermissions": true,
                "timeoutSec": 300,
                "graceSec": 5,
                "env": {
                    "HOME": home,
                    "CLAUDE_CONFIG_DIR": format!("{home}/.claude"),
                    "ANTHROPIC_BASE_URL": base,
                    "ANTHROPIC_API_KEY": "sk-ant-test-key",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                },
            }),
            "codex_local" => {
                let codex_home = self.home.join("codex");
                std::fs::create_dir_all(&codex_home).unwrap();
                std::fs::write(
                    codex_home.join("config.toml"),
                    format!(
                        "model_provider = \"mock\"\n\
                         [model_providers.mock]\n\
                         name = \"mock\"\n\
                         base_url = \"{base}/v1\"\n\
                         env_key = \"OPENAI_API_KEY\"\n\
                         wire_api = \"responses\"\n\
                         supports_websockets = false\n"
                    ),
                )
                .unwrap();
                json!({
                    "model": "gpt-5",
                    "dangerouslyBypassApprovalsAndSandbox": true,
                    "timeoutSec": 300,
                    "graceSec": 5,
                    "env": {
                        "HOME": home,
                        "CODEX_HOME": codex_home.display().to_string(),
                        "OPENAI_API_KEY": "sk-test-key",
                    },
                })
            }
            "opencode_local" => {
                let config = self.home.join("opencode.json");
                std::fs::write(
                    &config,
                    json!({
                        "$schema": "https://opencode.ai/config.json",
                        "provider": { "mock": {
                            "npm": "@ai-sdk/openai-compatible",
                            "name": "Mock",
                            "options": { "baseURL": format!("{base}/v1"), "apiKey": "sk-offline" },
                            "models": { "mock-model": { "name": "Mock Model",
                                "cost": { "input": 3, "output": 15, "cache_read": 0.3 } } }
                        } },
                        "model": "mock/mock-model",
                        "autoupdate": false,
                        "share": "disabled",
                        "permission": { "bash": "allow", "edit": "allow", "webfetch": "allow" }
                    })
                    .to_string(),
                )
                .unwrap();
                json!({
                    "model": "mock/mock-model",
                    "timeoutSec": 300,
                    "graceSec": 5,
                    "env": {
                        "HOME": home,
                        "OPENCODE_CONFIG": config.display().to_string(),
                        "XDG_DATA_HOME": format!("{home}/data"),
                        "XDG_STATE_HOME": format!("{home}/state"),
                        "XDG_CONFIG_HOME": format!("{home}/config"),
                    },
                })
            }
            // Gemini refuses a custom base URL unless its home's settings
            // choose the API key (see the gemini adapter's notes).
            "gemini_local" => {
                let dir = self.home.join(".gemini");
                std::fs::create_dir_all(&dir).unwrap();
                let auth = json!({ "selectedAuthType": "gemini-api-key",
                                   "security": { "auth": { "selectedType": "gemini-api-key" } } });
                std::fs::write(dir.join("settings.json"), auth.to_string()).unwrap();
                json!({
                    "model": "gemini-2.5-flash",
                    "timeoutSec": 300,
                    "graceSec": 5,
                    "env": {
                        "HOME": home,
                        "GEMINI_API_KEY": "gm-test-key",
                        "GOOGLE_GEMINI_BASE_URL": base,
                    },
                })
            }
            // Pi knows a custom provider only from a models.json: the
            // original's PAPERCLIP_PI_PROVIDERS, priced like OpenCode's mock.
            "pi_local" => json!({
                "model": "mock/mock-model",
                "timeoutSec": 300,
                "graceSec": 5,
                "env": {
                    "HOME": home,
                    "PI_OFFLINE": "1",
                    "PI_CODING_AGENT_SESSION_DIR": format!("{home}/sessions"),
                    "PAPERCLIP_PI_PROVIDERS": crate::pi_agents::providers(
                        "mock", &base, &[("mock-model", json!({ "input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 0 }))]),
                },
            }),
            _ => unreachable!(),
        }
    }

    /// Deletes the CLI's stored sessions so the next resume is refused;
    /// `false` when there was nothing to delete.
    pub fn forget_sessions(&self) -> bool {
        match self.kind {
            "claude_local" => std::fs::remove_dir_all(self.home.join(".claude/projects")).is_ok(),
            "codex_local" => std::fs::remove_dir_all(self.home.join("codex/sessions")).is_ok(),
            // OpenCode keeps sessions in one SQLite database.
            "opencode_local" => {
                let db = self.home.join("data/opencode/opencode.db");
                let found = std::fs::remove_file(&db).is_ok();
                for suffix in ["-wal", "-shm"] {
                    let _ = std::fs::remove_file(db.with_extension(format!("db{suffix}")));
                }
                found
            }
            // Gemini keeps each project's chats under ~/.gemini/tmp.
            "gemini_local" => std::fs::remove_dir_all(self.home.join(".gemini/tmp")).is_ok(),
            "pi_local" => std::fs::remove_dir_all(self.home.join("sessions")).is_ok(),
            _ => false,
        }
    }
}

/// OpenCode installs `@opencode-ai/plugin` (about 95 MB with npm, from the
/// network) in the background into every config folder that has no
/// `node_modules`, on every start in a fresh HOME: in CI that was most of an
/// OpenCode test's CPU. A folder whose manifest and lockfile already name it
/// is left alone (OpenCode's own check); no test uses a plugin.
fn settle_opencode_plugin_deps(dir: &std::path::Path) {
    let version = "1.18.33";
    std::fs::create_dir_all(dir.join("node_modules")).unwrap();
    let deps = json!({ "@opencode-ai/plugin": version });
    std::fs::write(
        dir.join("package.json"),
        json!({ "dependencies": deps }).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("package-lock.json"),
        json!({ "lockfileVersion": 3, "packages": { "": { "dependencies": deps } } }).to_string(),
    )
    .unwrap();
}

impl Drop for Cli {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// Whether /proc shows a process of group `pgid` that is not a zombie.
pub fn group_has_live_members(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let mut f = rest.split_whitespace();
        let state = f.next();
        let group = f.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && !matches!(state, Some("Z" | "X"))
    })
}
