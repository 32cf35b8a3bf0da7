//! Which coding CLIs this machine has: each one's program on the server's
//! `PATH`, the version it answers with, and whether a run would find
//! credentials (a key in the environment runs get, or the file the CLI's
//! own login writes). The hire form offers a preset for each one found.
//! Only names and paths are reported, never a key's value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::environment::{resolve_command, version_within};

/// The CLIs looked for, in the order offered.
pub const CLIS: &[(&str, &str)] = &[
    ("claude_local", "claude"),
    ("codex_local", "codex"),
    ("opencode_local", "opencode"),
    ("gemini_local", "gemini"),
    ("pi_local", "pi"),
];

/// How a run of this CLI would authenticate.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Auth {
    pub ready: bool,
    /// What was found: `ANTHROPIC_API_KEY`, or a credentials file's path.
    pub via: Option<String>,
    /// In words, for the form.
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Detected {
    pub adapter_type: &'static str,
    pub command: &'static str,
    pub installed: bool,
    pub path: Option<String>,
    pub version: Option<String>,
    /// Why `--version` did not answer, when it did not.
    pub error: Option<String>,
    pub auth: Auth,
}

/// The variable a run of `kind` inherits from the server for its key (the
/// CLI adapters pass exactly this one through).
pub fn key_var(kind: &str) -> Option<&'static str> {
    match kind {
        "claude_local" => Some("ANTHROPIC_API_KEY"),
        "codex_local" => Some("OPENAI_API_KEY"),
        "gemini_local" => Some("GEMINI_API_KEY"),
        _ => None,
    }
}

/// Where each CLI's own login keeps its credentials, under `home` (or the
/// CLI's home variable in `env`).
fn credential_files(kind: &str, home: &Path, env: &BTreeMap<String, String>) -> Vec<PathBuf> {
    let var = |k: &str| env.get(k).map(PathBuf::from);
    match kind {
        "claude_local" => {
            let dir = var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude"));
            vec![dir.join(".credentials.json")]
        }
        "codex_local" => {
            let dir = var("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
            vec![dir.join("auth.json")]
        }
        "opencode_local" => {
            let data = var("XDG_DATA_HOME").unwrap_or_else(|| home.join(".local/share"));
            vec![data.join("opencode/auth.json")]
        }
        // What `gemini`'s Google login writes.
        "gemini_local" => vec![home.join(".gemini/oauth_creds.json")],
        "pi_local" => {
            let dir = var("PI_CODING_AGENT_DIR").unwrap_or_else(|| home.join(".pi/agent"));
            vec![dir.join("auth.json")]
        }
        _ => Vec::new(),
    }
}

fn login_command(kind: &str) -> &'static str {
    match kind {
        "claude_local" => "claude login",
        "codex_local" => "codex login",
        "gemini_local" => "gemini",
        "pi_local" => "pi` then `/login",
        _ => "opencode auth login",
    }
}

/// Whether a run of `kind` with the agent's `env` would have credentials:
/// a key in the agent's env, the key variable on the server (runs inherit
/// it), or the CLI's credentials file. `server_env` is the server's
/// environment as far as these names go.
pub fn auth(
    kind: &str,
    agent_env: &BTreeMap<String, String>,
    server_env: &BTreeMap<String, String>,
) -> Auth {
    let key = key_var(kind);
    let in_agent = agent_env.keys().find(|k| {
        Some(k.as_str()) == key
            || (key.is_none() && (k.ends_with("_API_KEY") || *k == "PAPERCLIP_PI_PROVIDERS"))
    });
    if let Some(name) = in_agent {
        return Auth {
            ready: true,
            via: Some(name.clone()),
            message: format!("{name} is set in the agent's environment"),
            hint: None,
        };
    }
    if let Some(name) = key.filter(|k| server_env.get(*k).is_some_and(|v| !v.is_empty())) {
        return Auth {
            ready: true,
            via: Some(name.to_string()),
            message: format!("{name} is set on the server; runs inherit it"),
            hint: None,
        };
    }
    // A HOME in the agent's env is the one its CLI reads.
    let home = agent_env
        .get("HOME")
        .or_else(|| server_env.get("HOME"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let mut env = server_env.clone();
    env.extend(agent_env.clone());
    let files = credential_files(kind, &home, &env);
    if let Some(found) = files.iter().find(|f| f.is_file()) {
        return Auth {
            ready: true,
            via: Some(found.display().to_string()),
            message: format!("Logged in ({} exists)", found.display()),
            hint: None,
        };
    }
    let looked = files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let key_words = key.map_or("provider key (e.g. ANTHROPIC_API_KEY)".to_string(), |k| {
        k.to_string()
    });
    Auth {
        ready: false,
        via: None,
        message: format!("Not logged in: no {key_words} and no {looked}"),
        hint: Some(format!(
            "Run `{}` on the server as the user it runs as, or set {key_words} in the agent's environment",
            login_command(kind)
        )),
    }
}

/// The server's values of the variables [`auth`] reads.
pub fn server_env() -> BTreeMap<String, String> {
    [
        "HOME",
        "PATH",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "XDG_DATA_HOME",
    ]
    .into_iter()
    .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
    .collect()
}

/// Looks for every CLI in [`CLIS`] at once; each `--version` is bounded.
pub async fn detect() -> Vec<Detected> {
    let server = server_env();
    let none = BTreeMap::new();
    let probes = CLIS.iter().map(|(kind, command)| {
        let server = &server;
        let none = &none;
        async move {
            let program = resolve_command(
                command,
                server.get("PATH").map(String::as_str),
                Path::new("/"),
            );
            let (version, error) = match &program {
                Some(p) => match package_version(p) {
                    Some(v) => (Some(v), None),
                    // Generous: OpenCode's runtime can take seconds to start
                    // on a busy machine, and a slow answer is still an answer.
                    None => match version_within(p, &[], Duration::from_secs(30)).await {
                        Ok(v) => (Some(v), None),
                        Err(e) => (None, Some(e)),
                    },
                },
                None => (None, None),
            };
            Detected {
                adapter_type: kind,
                command,
                installed: program.is_some(),
                path: program.map(|p| p.display().to_string()),
                version,
                error,
                auth: auth(kind, none, server),
            }
        }
    });
    // Started together, so the slowest CLI bounds the wait, not their sum.
    futures::future::join_all(probes).await
}

/// The version an npm-installed CLI declares: its command resolves (through
/// the `bin` link) into the package, whose `package.json` names it. Reading
/// it costs a file read, where `--version` starts a Node runtime: seconds
/// of CPU each on a busy machine, for every CLI, on every hire dialog.
fn package_version(program: &Path) -> Option<String> {
    let real = std::fs::canonicalize(program).ok()?;
    for dir in real.ancestors().skip(1).take(6) {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let in_node_modules = dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "node_modules" || n.to_string_lossy().starts_with('@'));
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        return manifest["version"]
            .as_str()
            .filter(|v| in_node_modules && v.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_string);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_npm_cli_reports_its_package_version_and_a_bare_binary_none() {
        let root = std::env::temp_dir().join(format!("pkgver-{}", std::process::id()));
        let pkg = root.join("lib/node_modules/@acme/tool");
        std::fs::create_dir_all(pkg.join("dist")).unwrap();
        std::fs::write(
            pkg.join("package.json"),
            r#"{"name":"@acme/tool","version":"1.2.3"}"#,
        )
        .unwrap();
        std::fs::write(pkg.join("dist/cli.js"), "").unwrap();
        std::fs::create_dir_all(root.join("bin")).unwrap();
        let link = root.join("bin/tool");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(pkg.join("dist/cli.js"), &link).unwrap();
        assert_eq!(package_version(&link).as_deref(), Some("1.2.3"));
        // A project's own package.json above a plain binary is not its version.
        std::fs::write(root.join("package.json"), r#"{"version":"9.9.9"}"#).unwrap();
        std::fs::write(root.join("bin/plain"), "").unwrap();
        assert_eq!(package_version(&root.join("bin/plain")), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn credentials_come_from_the_agent_the_server_or_a_login_file() {
        let home = std::env::temp_dir().join(format!("pc-detect-{}", std::process::id()));
        let server = env(&[("HOME", home.to_str().unwrap())]);
        let none = auth("claude_local", &env(&[]), &server);
        assert!(!none.ready && none.via.is_none());
        assert!(
            none.message.contains("ANTHROPIC_API_KEY"),
            "{}",
            none.message
        );
        assert!(none.hint.unwrap().contains("claude login"));

        let agent = auth(
            "claude_local",
            &env(&[("ANTHROPIC_API_KEY", "sk-secret")]),
            &server,
        );
        assert!(agent.ready);
        assert_eq!(agent.via.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert!(!agent.message.contains("sk-secret"));

        let mut with_key = server.clone();
        with_key.insert("OPENAI_API_KEY".into(), "sk-x".into());
        let server_key = auth("codex_local", &env(&[]), &with_key);
        assert!(server_key.ready && server_key.message.contains("on the server"));
        // Runs of OpenCode do not inherit the server's keys: only its login.
        assert!(!auth("opencode_local", &env(&[]), &with_key).ready);

        let file = home.join(".codex/auth.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{}").unwrap();
        let login = auth("codex_local", &env(&[]), &server);
        assert!(login.ready, "{}", login.message);
        assert_eq!(login.via, Some(file.display().to_string()));
        std::fs::remove_dir_all(&home).unwrap();
    }
}
