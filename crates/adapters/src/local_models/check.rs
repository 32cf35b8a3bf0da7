//! The environment check of an agent on a local model (beyond upstream,
//! whose check never contacts the model server): is the server up, does it
//! list the model, can the model call tools (agents work through tools), and
//! does a one-token completion work. Called by the environment-test route
//! for every config; a config on no custom OpenAI-compatible provider gets
//! no checks from here.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{brief, client, get_json, openai_models, why};
use crate::environment::{Check, Level};

/// A completion may have to load the model into memory first.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The provider an agent's config points its CLI at.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub provider: String,
    /// Ends in `/v1` as the CLIs take it.
    pub base_url: String,
    pub model: String,
    /// A literal key or one from a plain env value; `None` when it is a
    /// secret (not resolved for a check) or absent.
    pub api_key: Option<String>,
}

/// An env value as text: a string or upstream's `{ "type": "plain" }` binding.
fn env_text(config: &Value, var: &str) -> Option<String> {
    let v = config.get("env")?.get(var)?;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("plain") => {
            o.get("value").and_then(Value::as_str).map(str::to_string)
        }
        _ => None,
    }
}

/// A key as the CLI would resolve it: Pi reads a value naming a variable
/// from the environment, OpenCode its `{env:NAME}` form.
fn resolve_key(config: &Value, raw: Option<&str>) -> Option<String> {
    let raw = raw?;
    let name = raw
        .strip_prefix("{env:")
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(raw);
    let bound = config.get("env").and_then(|e| e.get(name)).is_some();
    if bound {
        return env_text(config, name);
    }
    (!raw.starts_with("{env:")).then(|| raw.to_string())
}

/// Where `config` sends its model requests, if to a custom provider of the
/// OpenAI chat-completions kind.
pub fn target(adapter_type: &str, config: &Value) -> Option<Target> {
    let model = config.get("model")?.as_str()?;
    let (provider, id) = model.split_once('/')?;
    let (base, key) = match adapter_type {
        "pi_local" => {
            let text = env_text(config, "PAPERCLIP_PI_PROVIDERS")?;
            let providers: Value = serde_json::from_str(&text).ok()?;
            let p = providers.get(provider)?;
            let api = p.get("api").and_then(Value::as_str);
            if !matches!(api, None | Some("openai-completions")) {
                return None;
            }
            let key = p.get("apiKey").and_then(Value::as_str);
            (
                p.get("baseUrl")?.as_str()?.to_string(),
                resolve_key(config, key),
            )
        }
        "opencode_local" => {
            let text = env_text(config, "OPENCODE_CONFIG_CONTENT")?;
            let content: Value = serde_json::from_str(&text).ok()?;
            let options = content.get("provider")?.get(provider)?.get("options")?;
            let key = options.get("apiKey").and_then(Value::as_str);
            (
                options.get("baseURL")?.as_str()?.to_string(),
                resolve_key(config, key),
            )
        }
        _ => return None,
    };
    Some(Target {
        provider: provider.to_string(),
        base_url: base.trim_end_matches('/').to_string(),
        model: id.to_string(),
        api_key: key,
    })
}

/// Ollama names a model `name:tag`; a bare name is `name:latest`.
fn same_model(listed: &str, asked: &str) -> bool {
    let full = |n: &str| {
        if n.contains(':') {
            n.to_string()
        } else {
            format!("{n}:latest")
        }
    };
    listed == asked || full(listed) == full(asked)
}

fn no_tools(model: &str) -> Check {
    Check::new(
        "local_model_no_tools",
        Level::Error,
        format!(
            "{model} cannot call tools: an agent works by running commands through tools, so every run would fail"
        ),
    )
    .hint("Pick a model with tool support (e.g. qwen3, llama3.1, mistral-nemo); Ollama lists it under \"tools\"")
}

/// The checks for `config`; empty when it is on no custom provider.
pub async fn checks(adapter_type: &str, config: &Value) -> Vec<Check> {
    let Some(t) = target(adapter_type, config) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let root = t
        .base_url
        .strip_suffix("/v1")
        .unwrap_or(&t.base_url)
        .to_string();
    let key = t.api_key.as_deref();
    let listed = match get_json(&format!("{}/models", t.base_url), key, LIST_TIMEOUT).await {
        Ok(v) => openai_models(&v),
        Err(e) => {
            out.push(
                Check::new(
                    "local_model_server_unreachable",
                    Level::Error,
                    format!(
                        "The model server of provider {} at {} does not answer",
                        t.provider, t.base_url
                    ),
                )
                .detail(e)
                .hint(
                    "Start it (`ollama serve`, LM Studio's server, vLLM), or correct its base URL",
                ),
            );
            return out;
        }
    };
    out.push(Check::new(
        "local_model_server_reachable",
        Level::Info,
        format!(
            "The model server at {} answers and lists {} models",
            t.base_url,
            listed.len()
        ),
    ));
    if !listed.iter().any(|m| same_model(&m.id, &t.model)) {
        let names: Vec<&str> = listed.iter().map(|m| m.id.as_str()).take(20).collect();
        out.push(
            Check::new(
                "local_model_not_listed",
                Level::Error,
                format!("The server does not list the model {}", t.model),
            )
            .detail(if names.is_empty() {
                "It lists no models".to_string()
            } else {
                format!("It lists: {}", names.join(", "))
            })
            .hint(format!(
                "Pull it first (`ollama pull {}`), or pick one it lists",
                t.model
            )),
        );
        return out;
    }
    // Ollama says what a model can do; other servers only by refusing.
    let ollama = ollama_capabilities(&root, &t.model, key).await;
    if let Some(caps) = &ollama {
        if !caps.iter().any(|c| c == "tools") {
            out.push(no_tools(&t.model));
            return out;
        }
    }
    out.push(probe(&t, ollama.is_none()).await);
    out
}

/// Ollama's `/api/show` capabilities; `None` when the server is not Ollama
/// (or too old to say).
async fn ollama_capabilities(root: &str, model: &str, key: Option<&str>) -> Option<Vec<String>> {
    let mut req = client(LIST_TIMEOUT)
        .post(format!("{root}/api/show"))
        .json(&json!({ "model": model }));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    let res = req.send().await.ok()?;
    if !res.status().is_success() {
        return None;
    }
    let v: Value = res.json().await.ok()?;
    let caps = v.get("capabilities")?.as_array()?;
    Some(
        caps.iter()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect(),
    )
}

/// A one-token completion. Offering a tool makes a server that cannot use
/// tools with this model refuse, which is what a run would meet.
async fn probe(t: &Target, with_tool: bool) -> Check {
    let mut body = json!({
        "model": t.model,
        "messages": [{ "role": "user", "content": "Reply with the word OK." }],
        "max_tokens": 1,
        "stream": false,
    });
    if with_tool {
        body["tools"] = json!([{ "type": "function", "function": {
            "name": "noop", "description": "Does nothing", "parameters": { "type": "object", "properties": {} } } }]);
    }
    let mut req = client(PROBE_TIMEOUT)
        .post(format!("{}/chat/completions", t.base_url))
        .json(&body);
    if let Some(key) = &t.api_key {
        req = req.bearer_auth(key);
    }
    let started = Instant::now();
    let failed = |detail: String| {
        let lower = detail.to_ascii_lowercase();
        if lower.contains("does not support tools")
            || lower.contains("tool") && lower.contains("not support")
        {
            return no_tools(&t.model).detail(detail);
        }
        Check::new(
            "local_model_probe_failed",
            Level::Error,
            format!("The server rejected a one-token completion with {}", t.model),
        )
        .detail(detail)
        .hint("Runs fail the same way: check the model's name, that it is loaded, and the server's log")
    };
    let res = match req.send().await {
        Ok(res) => res,
        Err(e) => return failed(why(e)),
    };
    let status = res.status();
    if !status.is_success() {
        let text = res.text().await.unwrap_or_default();
        return failed(format!("{status}{}", brief(&text)));
    }
    Check::new(
        "local_model_probe_passed",
        Level::Info,
        format!(
            "A one-token completion with {} worked in {} ms",
            t.model,
            started.elapsed().as_millis()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_come_from_either_clis_provider_config() {
        let providers = json!({ "ollama": { "baseUrl": "http://h:11434/v1/", "api": "openai-completions",
            "apiKey": "LOCAL_MODEL_API_KEY", "models": [{ "id": "qwen3:8b" }] } });
        let pi = json!({ "model": "ollama/qwen3:8b", "env": {
            "PAPERCLIP_PI_PROVIDERS": providers.to_string(),
            "LOCAL_MODEL_API_KEY": { "type": "secret_ref", "secretId": "s" } } });
        let t = target("pi_local", &pi).unwrap();
        assert_eq!(t.base_url, "http://h:11434/v1");
        assert_eq!(t.model, "qwen3:8b");
        assert_eq!(t.api_key, None, "a secret is not resolved for a check");
        let mut plain = pi.clone();
        plain["env"]["LOCAL_MODEL_API_KEY"] = json!("k1");
        assert_eq!(
            target("pi_local", &plain).unwrap().api_key.as_deref(),
            Some("k1")
        );
        assert!(target("pi_local", &json!({ "model": "anthropic/claude" })).is_none());
        assert!(target("claude_local", &pi).is_none());

        let content = json!({ "provider": { "lm": { "options": { "baseURL": "http://x/v1", "apiKey": "local" } } } });
        let oc =
            json!({ "model": "lm/m", "env": { "OPENCODE_CONFIG_CONTENT": content.to_string() } });
        let t = target("opencode_local", &oc).unwrap();
        assert_eq!(
            (t.provider.as_str(), t.api_key.as_deref()),
            ("lm", Some("local"))
        );
    }

    #[test]
    fn model_names_match_as_ollama_resolves_them() {
        assert!(same_model("llama3:latest", "llama3"));
        assert!(same_model("qwen2.5-coder", "qwen2.5-coder"));
        assert!(!same_model("llama3:8b", "llama3"));
    }
}
