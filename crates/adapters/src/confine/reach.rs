//! Which hosts a network-confined run may reach, and which of them are on
//! loopback (mirrored into the sandbox rather than proxied).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::allow::{url_entry, Entry};
use super::helper::Mirror;
use super::plan::EnvFn;
use super::Network;
use crate::process::Spawn;

/// The hosts a network-confined run may reach: always the Paperclip API
/// and the model provider; with an allow-list, also the workspace's git
/// remote and the listed hosts.
pub(super) async fn allow_list(
    adapter: &str,
    network: &Network,
    spec: &Spawn,
    env: &EnvFn<'_>,
) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    out.extend(env("PAPERCLIP_API_URL").as_deref().and_then(url_entry));
    out.extend(provider_entries(adapter, env));
    if let Network::Allowlist(list) = network {
        out.extend(git_remotes(&spec.cwd).await);
        out.extend(list.iter().cloned());
    }
    let mut unique = Vec::new();
    for e in out {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    unique
}

fn provider_entries(adapter: &str, env: &EnvFn<'_>) -> Vec<Entry> {
    let from_url = |var: &str, default: &str| {
        env(var)
            .as_deref()
            .and_then(url_entry)
            .or_else(|| Entry::parse(default).ok())
    };
    match adapter {
        "claude_local" => from_url("ANTHROPIC_BASE_URL", "api.anthropic.com:443")
            .into_iter()
            .collect(),
        "codex_local" => {
            let mut out: Vec<Entry> = from_url("OPENAI_BASE_URL", "api.openai.com:443")
                .into_iter()
                .collect();
            let home = env("CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".codex")));
            if let Some(text) =
                home.and_then(|h| std::fs::read_to_string(h.join("config.toml")).ok())
            {
                out.extend(quoted_urls(&text, "base_url"));
            }
            out
        }
        "gemini_local" => from_url(
            "GOOGLE_GEMINI_BASE_URL",
            "generativelanguage.googleapis.com:443",
        )
        .into_iter()
        .collect(),
        "opencode_local" => {
            let mut text = env("OPENCODE_CONFIG_CONTENT").unwrap_or_default();
            if let Some(path) = env("OPENCODE_CONFIG") {
                text.push_str(&std::fs::read_to_string(path).unwrap_or_default());
            }
            quoted_urls(&text, "baseURL")
        }
        _ => Vec::new(),
    }
}

/// The URLs after `key` in a config text (TOML `key = "..."` or JSON
/// `"key": "..."`): enough to find a provider's base URL without parsing
/// every config dialect.
fn quoted_urls(text: &str, key: &str) -> Vec<Entry> {
    text.match_indices(key)
        .filter_map(|(at, _)| {
            let rest = text[at + key.len()..].trim_start_matches(['"', ' ', '=', ':', '\t']);
            let url = rest.split('"').next()?;
            url_entry(url)
        })
        .collect()
}

/// The http(s) remotes of the checkout (git over SSH cannot use an HTTP
/// proxy; it stays blocked).
async fn git_remotes(cwd: &Path) -> Vec<Entry> {
    let out = tokio::process::Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["config", "--get-regexp", r"^remote\..*\.url$"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match tokio::time::timeout(Duration::from_secs(10), out).await {
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' ').and_then(|(_, url)| url_entry(url)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Allowed loopback destinations with a port: listened on inside.
pub(super) fn mirrors(allow: &[Entry]) -> Vec<Mirror> {
    let mut out: Vec<Mirror> = Vec::new();
    for e in allow.iter().filter(|e| e.is_loopback()) {
        if let Some(port) = e.port {
            if !out.iter().any(|m| m.port == port) {
                out.push(Mirror {
                    host: e.host.clone(),
                    port,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_urls_are_found_in_config_texts() {
        let toml = "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = \"http://127.0.0.1:4100/v1\"\n";
        assert_eq!(
            quoted_urls(toml, "base_url"),
            [Entry::parse("127.0.0.1:4100").unwrap()]
        );
        let json = r#"{"provider":{"m":{"options":{"baseURL": "https://llm.example/v1"}}}}"#;
        assert_eq!(
            quoted_urls(json, "baseURL"),
            [Entry::parse("llm.example:443").unwrap()]
        );
        let env =
            |name: &str| (name == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9".to_string());
        assert_eq!(
            provider_entries("claude_local", &env),
            [Entry::parse("127.0.0.1:9").unwrap()]
        );
        let none = |_: &str| None;
        assert_eq!(
            provider_entries("claude_local", &none),
            [Entry::parse("api.anthropic.com:443").unwrap()]
        );
        assert!(provider_entries("process", &none).is_empty());
    }

    #[test]
    fn loopback_entries_with_a_port_are_mirrored_once() {
        let allow: Vec<Entry> = [
            "127.0.0.1:3100",
            "localhost:3100",
            "localhost",
            "api.example:443",
        ]
        .iter()
        .map(|e| Entry::parse(e).unwrap())
        .collect();
        let m = mirrors(&allow);
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].host.as_str(), m[0].port), ("127.0.0.1", 3100));
    }
}
