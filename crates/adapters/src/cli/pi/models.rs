//! The models a `pi_local` hire can pick and the one Pi picks by itself.
//! The ids `PAPERCLIP_PI_PROVIDERS` declares come first (a local server's
//! models, known without asking anyone), then what `pi --list-models`
//! prints: the models of every provider Pi has a login or key for. Pi is
//! asked with the same custom providers a run writes, in a directory of
//! its own, and its answer is kept a minute (it takes a second or more).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::super::catalog::env_value;
use super::super::CliConfig;
use super::{providers, split_model, AGENT_DIR_VAR, PROVIDERS_VAR};
use crate::models::{dedupe, DetectedModel, Model};

/// How long `pi --list-models` may take before the form does without it.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
const CACHE_FOR: Duration = Duration::from_secs(60);

/// What `pi --list-models` printed, by command, environment and providers.
static CACHE: Mutex<Vec<(String, Instant, Vec<Model>)>> = Mutex::new(Vec::new());

/// Forgets Pi's cached list (the models route's `?refresh=true`).
pub fn forget_cached() {
    CACHE.lock().unwrap().clear();
}

/// The declared models, then Pi's own list, each id once.
pub(super) async fn list(config: &CliConfig) -> Vec<Model> {
    let declared = declared_providers(config);
    let mut models = declared.as_ref().map(declared_models).unwrap_or_default();
    models.extend(listed(config, declared.as_ref()).await);
    dedupe(models)
}

/// The custom providers a run of this config would get: the agent's
/// `env.PAPERCLIP_PI_PROVIDERS`, else the server's (the original's
/// fallback), with `{env:VAR}` filled in the same way.
fn declared_providers(config: &CliConfig) -> Option<Map<String, Value>> {
    let raw = env_value(config, PROVIDERS_VAR)?;
    let list = providers::parse(&raw).ok().filter(|l| !l.is_empty())?;
    Some(providers::expand(&list, |name| env_value(config, name)))
}

/// `provider/id` for every model of every provider, labelled with its
/// `name` when it has one.
fn declared_models(providers: &Map<String, Value>) -> Vec<Model> {
    providers
        .iter()
        .flat_map(|(provider, p)| {
            p.get("models")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(move |m| {
                    let id = m.get("id")?.as_str()?.trim();
                    if id.is_empty() {
                        return None;
                    }
                    let full = format!("{provider}/{id}");
                    let label = m
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|n| !n.trim().is_empty())
                        .map(|n| format!("{n} ({full})"))
                        .unwrap_or_else(|| full.clone());
                    Some(Model::new(full, label))
                })
        })
        .collect()
}

/// `pi --list-models`, from the cache when asked within the last minute;
/// nothing when Pi is missing, fails or takes over [`LIST_TIMEOUT`].
async fn listed(config: &CliConfig, declared: Option<&Map<String, Value>>) -> Vec<Model> {
    let key = format!(
        "{}\n{:?}\n{}",
        config.command,
        config.env,
        declared
            .map(|d| Value::Object(d.clone()).to_string())
            .unwrap_or_default()
    );
    if let Some((_, _, hit)) = CACHE
        .lock()
        .unwrap()
        .iter()
        .find(|(k, at, _)| *k == key && at.elapsed() < CACHE_FOR)
    {
        return hit.clone();
    }
    let mut env: BTreeMap<String, String> = config.env.clone();
    // Only the adapter reads it (it may hold keys); Pi gets a models.json.
    env.remove(PROVIDERS_VAR);
    let scratch = std::env::temp_dir().join("paperclip-pi-models");
    // When the directory cannot be written Pi still lists the rest (and
    // the declared models are there already).
    let run_dir = declared.and_then(|list| {
        providers::write_agent_dir(&scratch, list, agent_dir(config).as_deref()).ok()
    });
    if let Some(dir) = &run_dir {
        env.insert(AGENT_DIR_VAR.into(), dir.display().to_string());
    }
    let mut cmd = tokio::process::Command::new(&config.command);
    crate::child_env::clear(&mut cmd, &[]);
    cmd.arg("--list-models")
        .envs(env.iter())
        .current_dir(std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(LIST_TIMEOUT, cmd.output()).await;
    if let Some(dir) = &run_dir {
        let _ = std::fs::remove_dir_all(dir);
    }
    let out = match out {
        Ok(Ok(out)) if out.status.success() => out,
        _ => return Vec::new(),
    };
    // Pi prints its table on stderr (older versions on stdout).
    let text = match String::from_utf8_lossy(&out.stderr).trim() {
        "" => String::from_utf8_lossy(&out.stdout).into_owned(),
        t => t.to_string(),
    };
    let models = parse_list(&text);
    let mut cache = CACHE.lock().unwrap();
    cache.retain(|(k, at, _)| *k != key && at.elapsed() < CACHE_FOR);
    cache.push((key, Instant::now(), models.clone()));
    models
}

/// Pi's table (`provider  model  context  max-out  thinking  images`),
/// columns apart by two or more spaces, as sorted `provider/model` ids. A
/// line that is not a row (the header, "No models available.") is skipped.
pub(super) fn parse_list(text: &str) -> Vec<Model> {
    let mut models: Vec<Model> = text
        .lines()
        .filter_map(|line| {
            let mut cols = line
                .trim()
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty());
            let (provider, model) = (cols.next()?, cols.next()?);
            let is_header = provider == "provider" && model == "model";
            let word = |s: &str| !s.contains(char::is_whitespace);
            (!is_header && word(provider) && word(model))
                .then(|| Model::plain(format!("{provider}/{model}")))
        })
        .collect();
    models.sort_by(|a, b| a.id.cmp(&b.id));
    dedupe(models)
}

/// Pi's agent directory: `PI_CODING_AGENT_DIR`, else `~/.pi/agent` of the
/// agent's `HOME` (else the server's).
fn agent_dir(config: &CliConfig) -> Option<PathBuf> {
    env_value(config, AGENT_DIR_VAR)
        .map(PathBuf::from)
        .or_else(|| env_value(config, "HOME").map(|h| Path::new(&h).join(".pi").join("agent")))
}

/// `defaultProvider`/`defaultModel` of Pi's `settings.json`, as the
/// `provider/model` id `model` takes (a `defaultModel` that already names
/// its provider is taken as it is).
pub(super) fn detect(config: &CliConfig) -> Option<DetectedModel> {
    let path = agent_dir(config)?.join("settings.json");
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&path).ok()?).ok()?;
    let text = |k: &str| {
        settings
            .get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let model = text("defaultModel")?;
    let id = match text("defaultProvider") {
        Some(provider) => format!("{provider}/{model}"),
        None => model.to_string(),
    };
    let (provider, _) = split_model(&id)?;
    Some(DetectedModel {
        provider: provider.to_string(),
        model: id.clone(),
        source: path.display().to_string(),
        candidates: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(env: &[(&str, &str)]) -> CliConfig {
        CliConfig {
            command: "pi".into(),
            cwd: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            model: Some("a/b".into()),
            extra_args: Vec::new(),
            instructions_file: None,
            timeout: None,
            grace: Duration::from_secs(1),
        }
    }

    #[test]
    fn pis_table_becomes_sorted_provider_model_ids() {
        let text = "provider   model                       context  max-out  thinking  images\n\
                    ollama     qwen3:8b                    128K     16.4K    no        no\n\
                    anthropic  claude-3-5-haiku-latest     200K     8.2K     no        yes\n\
                    ollama     qwen3:8b                    128K     16.4K    no        no\n";
        let ids: Vec<String> = parse_list(text).into_iter().map(|m| m.id).collect();
        assert_eq!(
            ids,
            ["anthropic/claude-3-5-haiku-latest", "ollama/qwen3:8b"]
        );
        let none = "No models available. Use /login to log into a provider via OAuth or API key. See:\n  /usr/lib/docs/providers.md\n";
        assert!(parse_list(none).is_empty());
    }

    #[test]
    fn declared_models_are_provider_ids_in_order_with_names() {
        let raw = r#"{"ollama":{"models":[{"id":"qwen3:8b"},{"id":"llama3.2:1b","name":"Llama"},{"id":" "}]},"gw":{}}"#;
        let got = declared_models(&providers::parse(raw).unwrap());
        assert_eq!(
            got,
            [
                Model::new("ollama/qwen3:8b", "ollama/qwen3:8b"),
                Model::new("ollama/llama3.2:1b", "Llama (ollama/llama3.2:1b)")
            ]
        );
    }

    #[tokio::test]
    async fn a_missing_pi_still_gives_the_declared_models() {
        let mut c = config(&[(
            PROVIDERS_VAR,
            r#"{"lm":{"baseUrl":"http://127.0.0.1:1/v1","models":[{"id":"m1"}]}}"#,
        )]);
        c.command = "/nonexistent/pi".into();
        let ids: Vec<String> = list(&c).await.into_iter().map(|m| m.id).collect();
        assert_eq!(ids, ["lm/m1"]);
    }

    #[tokio::test]
    async fn pi_lists_with_the_declared_providers_and_is_asked_once_a_minute() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pi-list-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("pi");
        std::fs::write(
            &fake,
            "#!/bin/sh
[ \"$1\" = --list-models ] || exit 2
[ -z \"$PAPERCLIP_PI_PROVIDERS\" ] || exit 3
\
             grep -q '\"lm\"' \"$PI_CODING_AGENT_DIR/models.json\" || exit 4
\
             printf 'provider   model     context\\nlm         m1        1K\\nanthropic  claude-x  2K\\n' >&2
",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = config(&[(
            PROVIDERS_VAR,
            r#"{"lm":{"baseUrl":"http://127.0.0.1:1/v1","models":[{"id":"m1"}]}}"#,
        )]);
        c.command = fake.display().to_string();
        let ids =
            |models: Vec<Model>| -> Vec<String> { models.into_iter().map(|m| m.id).collect() };
        assert_eq!(ids(list(&c).await), ["lm/m1", "anthropic/claude-x"]);
        std::fs::remove_file(&fake).unwrap();
        assert_eq!(
            ids(list(&c).await),
            ["lm/m1", "anthropic/claude-x"],
            "cached"
        );
        forget_cached();
        assert_eq!(ids(list(&c).await), ["lm/m1"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_settings_default_is_a_provider_model_id() {
        let dir = std::env::temp_dir().join(format!("pi-detect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.to_str().unwrap();
        let settings = dir.join("settings.json");
        std::fs::write(
            &settings,
            r#"{"defaultProvider":"ollama","defaultModel":"qwen3:8b"}"#,
        )
        .unwrap();
        let found = detect(&config(&[(AGENT_DIR_VAR, d)])).unwrap();
        assert_eq!(
            (found.model.as_str(), found.provider.as_str()),
            ("ollama/qwen3:8b", "ollama")
        );
        assert_eq!(found.source, settings.display().to_string());
        std::fs::write(&settings, r#"{"defaultModel":"qwen3:8b"}"#).unwrap();
        assert_eq!(detect(&config(&[(AGENT_DIR_VAR, d)])), None);
        std::fs::write(&settings, r#"{"defaultModel":"gw/m"}"#).unwrap();
        assert_eq!(
            detect(&config(&[(AGENT_DIR_VAR, d)])).unwrap().provider,
            "gw"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
