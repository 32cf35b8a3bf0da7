//! Models and default-model detection for the coding CLIs, by adapter type:
//! the default of [`super::CliKind::models`] and
//! [`super::CliKind::detect_model`]. A CLI that lists its own models is
//! asked (`opencode models`); a provider is asked for its list when a key
//! for it is set; otherwise a known list is offered, and the form still
//! takes any id typed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::CliConfig;
use crate::models::{dedupe, DetectedModel, Model};
use crate::BoxFuture;

/// The models for `kind` (`claude_local`, `codex_local`, `opencode_local`);
/// empty for a type this file does not know.
pub fn models<'a>(kind: &'static str, config: &'a CliConfig) -> BoxFuture<'a, Vec<Model>> {
    Box::pin(async move {
        match kind {
            "claude_local" => {
                let mut found = match env_value(config, "ANTHROPIC_API_KEY") {
                    Some(key) => {
                        let base = env_value(config, "ANTHROPIC_BASE_URL")
                            .unwrap_or_else(|| "https://api.anthropic.com".into());
                        provider_models(
                            &base,
                            &[
                                ("x-api-key", key),
                                ("anthropic-version", "2023-06-01".into()),
                            ],
                        )
                        .await
                    }
                    None => Vec::new(),
                };
                found.extend(known_models(kind));
                dedupe(found)
            }
            "codex_local" => {
                let mut found = match env_value(config, "OPENAI_API_KEY") {
                    Some(key) => {
                        let base = env_value(config, "OPENAI_BASE_URL")
                            .unwrap_or_else(|| "https://api.openai.com/v1".into());
                        let base = base
                            .trim_end_matches('/')
                            .trim_end_matches("/v1")
                            .to_string();
                        provider_models(&base, &[("authorization", format!("Bearer {key}"))]).await
                    }
                    None => Vec::new(),
                };
                found.extend(known_models(kind));
                dedupe(found)
            }
            "opencode_local" => {
                let listed = opencode_models(config).await;
                if listed.is_empty() {
                    known_models(kind)
                } else {
                    listed
                }
            }
            _ => Vec::new(),
        }
    })
}

/// The model `kind`'s CLI would choose on its own, from the environment
/// the run would have or the CLI's settings under the agent's `HOME`.
pub fn detect<'a>(
    kind: &'static str,
    config: &'a CliConfig,
) -> BoxFuture<'a, Option<DetectedModel>> {
    Box::pin(async move {
        let home = env_value(config, "HOME").map(PathBuf::from);
        match kind {
            "claude_local" => {
                if let Some(m) = env_value(config, "ANTHROPIC_MODEL") {
                    return Some(detected(m, "anthropic", "env:ANTHROPIC_MODEL"));
                }
                let path = home?.join(".claude/settings.json");
                let m = read_json(&path)?.get("model")?.as_str()?.trim().to_string();
                Some(detected(m, "anthropic", &path.display().to_string()))
                    .filter(|d| !d.model.is_empty())
            }
            "codex_local" => {
                let dir = env_value(config, "CODEX_HOME")
                    .map(PathBuf::from)
                    .or_else(|| home.map(|h| h.join(".codex")))?;
                let path = dir.join("config.toml");
                let text = std::fs::read_to_string(&path).ok()?;
                let top = toml_top_level(&text);
                let model = top.get("model")?.clone();
                let provider = top
                    .get("model_provider")
                    .cloned()
                    .unwrap_or_else(|| "openai".into());
                Some(detected(model, &provider, &path.display().to_string()))
            }
            "opencode_local" => {
                let dir = env_value(config, "XDG_CONFIG_HOME")
                    .map(PathBuf::from)
                    .or_else(|| home.map(|h| h.join(".config")))?
                    .join("opencode");
                ["opencode.json", "opencode.jsonc", "config.json"]
                    .iter()
                    .find_map(|name| {
                        let path = dir.join(name);
                        let model = read_json(&path)?.get("model")?.as_str()?.trim().to_string();
                        let (provider, _) = model.split_once('/')?;
                        Some(detected(
                            model.clone(),
                            provider,
                            &path.display().to_string(),
                        ))
                    })
            }
            _ => None,
        }
    })
}

fn detected(model: String, provider: &str, source: &str) -> DetectedModel {
    DetectedModel {
        model,
        provider: provider.into(),
        source: source.into(),
        candidates: Vec::new(),
    }
}

/// A variable as a run would see it: the agent's `env` first, then the
/// server's own environment (which a run inherits these from).
pub(crate) fn env_value(config: &CliConfig, name: &str) -> Option<String> {
    config
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// JSON, or JSON with `//` line comments (opencode's `.jsonc`).
fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok().or_else(|| {
        let stripped: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::from_str(&stripped).ok()
    })
}

/// `key = "value"` lines before the first `[table]`: the only part of
/// Codex's config.toml that names its default model and provider.
fn toml_top_level(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            break;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.split(" #").next().unwrap_or("").trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')));
        if let Some(v) = unquoted.filter(|v| !v.is_empty()) {
            out.insert(key.trim().to_string(), v.to_string());
        }
    }
    out
}

/// `GET {base}/v1/models` (Anthropic's and OpenAI's shape: `data[].id`,
/// Anthropic's `display_name`); nothing when it does not answer in 5 s.
async fn provider_models(base: &str, headers: &[(&str, String)]) -> Vec<Model> {
    let url = format!("{}/v1/models", base.trim_end_matches('/'));
    let client = reqwest::Client::new();
    let mut req = client.get(url).timeout(Duration::from_secs(5));
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    let Ok(resp) = req.send().await else {
        return Vec::new();
    };
    if !resp.status().is_success() {
        return Vec::new();
    }
    let Ok(body) = resp.json::<Value>().await else {
        return Vec::new();
    };
    let items = body
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    dedupe(
        items
            .iter()
            .filter_map(|m| {
                let id = m.get("id")?.as_str()?;
                let label = m.get("display_name").and_then(Value::as_str).unwrap_or(id);
                Some(Model::new(id, label))
            })
            .collect(),
    )
}

/// What `opencode models` printed at most a minute ago, by command and
/// environment: the CLI takes seconds to answer.
static OPENCODE_CACHE: Mutex<Vec<(String, Instant, Vec<Model>)>> = Mutex::new(Vec::new());

/// Forgets every CLI's cached list (upstream's `?refresh=true`).
pub fn forget_cached() {
    OPENCODE_CACHE.lock().unwrap().clear();
    super::pi::forget_cached();
}

async fn opencode_models(config: &CliConfig) -> Vec<Model> {
    let key = format!("{}\n{:?}", config.command, config.env);
    if let Some((_, _, hit)) = OPENCODE_CACHE
        .lock()
        .unwrap()
        .iter()
        .find(|(k, at, _)| *k == key && at.elapsed() < Duration::from_secs(60))
    {
        return hit.clone();
    }
    let mut cmd = tokio::process::Command::new(&config.command);
    cmd.arg("models")
        .envs(config.env.iter())
        // So the CLI does not write a project config where it runs.
        .env("OPENCODE_DISABLE_PROJECT_CONFIG", "true")
        .current_dir(std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = match tokio::time::timeout(Duration::from_secs(20), cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => out,
        _ => return Vec::new(),
    };
    let models = parse_opencode_models(&String::from_utf8_lossy(&out.stdout));
    if !models.is_empty() {
        let mut cache = OPENCODE_CACHE.lock().unwrap();
        cache.retain(|(k, at, _)| *k != key && at.elapsed() < Duration::from_secs(60));
        cache.push((key, Instant::now(), models.clone()));
    }
    models
}

/// One `provider/model` per line (anything after the first word ignored).
pub fn parse_opencode_models(stdout: &str) -> Vec<Model> {
    let mut models: Vec<Model> = stdout
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|id| matches!(id.split_once('/'), Some((p, m)) if !p.is_empty() && !m.is_empty()))
        .map(Model::plain)
        .collect();
    models.sort_by(|a, b| a.id.cmp(&b.id));
    dedupe(models)
}

/// Known ids per CLI, for when nothing better answers; labels are made
/// from the ids.
const CLAUDE: &[&str] = &[
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-sonnet-4-6",
    "claude-sonnet-4-5",
    "claude-haiku-4-5",
];
const CODEX: &[&str] = &[
    "gpt-5.4",
    "gpt-5.4-mini",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "o3",
    "o4-mini",
    "codex-mini-latest",
];
const OPENCODE: &[&str] = &[
    "anthropic/claude-sonnet-4-6",
    "anthropic/claude-opus-4-8",
    "openai/gpt-5.4",
    "openai/gpt-5.4-mini",
];

/// The list offered for `kind` when neither its CLI nor its provider lists
/// one; empty for a kind this file does not know.
pub fn known_models(kind: &str) -> Vec<Model> {
    match kind {
        "claude_local" => known(CLAUDE),
        "codex_local" => known(CODEX),
        "opencode_local" => known(OPENCODE),
        _ => Vec::new(),
    }
}

fn known(ids: &[&str]) -> Vec<Model> {
    ids.iter().map(|id| Model::new(*id, label_of(id))).collect()
}

/// `claude-sonnet-4-6` → `Claude Sonnet 4.6`; other ids stay as they are.
fn label_of(id: &str) -> String {
    let Some(rest) = id.strip_prefix("claude-") else {
        return id.to_string();
    };
    let mut words = vec!["Claude".to_string()];
    let mut version = Vec::new();
    for part in rest.split('-') {
        if part.chars().all(|c| c.is_ascii_digit()) {
            version.push(part);
        } else {
            let mut c = part.chars();
            let first = c
                .next()
                .map(|f| f.to_uppercase().collect::<String>())
                .unwrap_or_default();
            words.push(first + c.as_str());
        }
    }
    if !version.is_empty() {
        words.push(version.join("."));
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_lines_become_sorted_provider_model_ids() {
        let out = "openai/gpt-5.4\nnot-a-model\n  anthropic/claude-sonnet-4-6  (default)\nopenai/gpt-5.4\n/x\n";
        let ids: Vec<String> = parse_opencode_models(out)
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(ids, ["anthropic/claude-sonnet-4-6", "openai/gpt-5.4"]);
    }

    #[test]
    fn codex_toml_top_level_keys_stop_at_the_first_table() {
        let top = toml_top_level(
            "# c\nmodel = \"gpt-5.4\"  # mine\nmodel_provider='ollama'\n[profiles.x]\nmodel = \"o3\"\n",
        );
        assert_eq!(top.get("model").map(String::as_str), Some("gpt-5.4"));
        assert_eq!(
            top.get("model_provider").map(String::as_str),
            Some("ollama")
        );
    }

    #[test]
    fn claude_labels_are_read_from_ids() {
        assert_eq!(label_of("claude-sonnet-4-6"), "Claude Sonnet 4.6");
        assert_eq!(label_of("claude-opus-5"), "Claude Opus 5");
        assert_eq!(label_of("gpt-5"), "gpt-5");
    }
}
