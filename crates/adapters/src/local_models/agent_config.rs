//! The `adapterConfig` of an agent hired "on a local model": the provider
//! config the CLI needs, written for the person. `pi_local` gets upstream's
//! `env.PAPERCLIP_PI_PROVIDERS` (Pi's models.json `providers` shape) and
//! `model: "<provider>/<id>"`, so a config made here also runs on the
//! original; `opencode_local` gets an `@ai-sdk/openai-compatible` provider in
//! `OPENCODE_CONFIG_CONTENT` (the adapter merges its instructions into it)
//! with the model's `cost`, which makes its zero a price rather than unknown.
//! A key is never written in: the CLI reads it from a variable bound to the
//! server's company secret.

use serde_json::{json, Map, Value};

use super::Flavour;

/// The variable a hired agent's CLI reads the server's key from: Pi resolves
/// an `apiKey` naming a variable, OpenCode its `{env:...}` form.
pub const KEY_VAR: &str = "LOCAL_MODEL_API_KEY";

/// What the hire is on.
#[derive(Debug, Clone)]
pub struct HireOn<'a> {
    /// The provider name the CLI and the cost events use (`ollama`).
    pub provider_key: &'a str,
    /// A person's name for the server, for the CLI's model list.
    pub server_name: &'a str,
    pub flavour: Flavour,
    /// Without `/v1`.
    pub base_url: &'a str,
    pub model: &'a str,
    /// The company secret holding the server's key.
    pub api_key_secret_id: Option<&'a str>,
    /// USD per million input and output tokens; zero for a free server.
    pub price: (f64, f64),
}

/// The adapter types a local model can be hired on.
pub const ADAPTER_TYPES: &[&str] = &["pi_local", "opencode_local"];

/// The config for `adapter_type`, or `None` for a type that takes no
/// custom provider.
pub fn agent_config(adapter_type: &str, on: &HireOn<'_>) -> Option<Value> {
    let base = format!("{}/v1", on.base_url.trim_end_matches('/'));
    let mut env = Map::new();
    if let Some(secret) = on.api_key_secret_id {
        env.insert(
            KEY_VAR.into(),
            json!({ "type": "secret_ref", "secretId": secret, "version": "latest" }),
        );
    }
    // Local servers ignore the key, but both CLIs require one for a
    // custom provider; the flavour's own name says what it is.
    let placeholder = match on.flavour {
        Flavour::Ollama => "ollama",
        Flavour::OpenAiCompatible => "local",
    };
    let (input, output) = on.price;
    match adapter_type {
        "pi_local" => {
            let key = on.api_key_secret_id.map_or(placeholder, |_| KEY_VAR);
            let providers = json!({ on.provider_key: {
                "baseUrl": base,
                "api": "openai-completions",
                "apiKey": key,
                "models": [{
                    "id": on.model,
                    "name": format!("{} on {}", on.model, on.server_name),
                    "cost": { "input": input, "output": output, "cacheRead": 0, "cacheWrite": 0 },
                }],
            } });
            // A local model needs no startup network call (update checks).
            env.insert("PI_OFFLINE".into(), Value::String("1".into()));
            env.insert(
                "PAPERCLIP_PI_PROVIDERS".into(),
                Value::String(providers.to_string()),
            );
            Some(json!({
                "model": format!("{}/{}", on.provider_key, on.model),
                "env": env,
            }))
        }
        "opencode_local" => {
            let key = match on.api_key_secret_id {
                Some(_) => format!("{{env:{KEY_VAR}}}"),
                None => placeholder.to_string(),
            };
            let content = json!({
                "provider": { on.provider_key: {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": on.server_name,
                    "options": { "baseURL": base, "apiKey": key },
                    "models": { on.model: { "name": on.model,
                        "cost": { "input": input, "output": output } } },
                } },
                "model": format!("{}/{}", on.provider_key, on.model),
            });
            env.insert(
                "OPENCODE_CONFIG_CONTENT".into(),
                Value::String(content.to_string()),
            );
            Some(json!({
                "model": format!("{}/{}", on.provider_key, on.model),
                "env": env,
            }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(secret: Option<&'static str>, price: (f64, f64)) -> HireOn<'static> {
        HireOn {
            provider_key: "ollama",
            server_name: "Ollama",
            flavour: Flavour::Ollama,
            base_url: "http://127.0.0.1:11434",
            model: "qwen3:8b",
            api_key_secret_id: secret,
            price,
        }
    }

    #[test]
    fn pi_gets_upstreams_providers_shape_at_zero_cost() {
        let cfg = agent_config("pi_local", &on(None, (0.0, 0.0))).unwrap();
        assert_eq!(cfg["model"], "ollama/qwen3:8b");
        let providers: Value =
            serde_json::from_str(cfg["env"]["PAPERCLIP_PI_PROVIDERS"].as_str().unwrap()).unwrap();
        let p = &providers["ollama"];
        assert_eq!(p["baseUrl"], "http://127.0.0.1:11434/v1");
        assert_eq!(p["api"], "openai-completions");
        assert_eq!(p["apiKey"], "ollama");
        assert_eq!(p["models"][0]["id"], "qwen3:8b");
        assert_eq!(p["models"][0]["cost"]["input"], 0.0);
        assert!(cfg["env"].get(KEY_VAR).is_none());
    }

    #[test]
    fn a_key_is_a_secret_reference_and_a_price_is_kept() {
        let cfg = agent_config("pi_local", &on(Some("s-1"), (0.5, 1.5))).unwrap();
        assert_eq!(cfg["env"][KEY_VAR]["secretId"], "s-1");
        let text = cfg["env"]["PAPERCLIP_PI_PROVIDERS"].as_str().unwrap();
        let providers: Value = serde_json::from_str(text).unwrap();
        assert_eq!(providers["ollama"]["apiKey"], KEY_VAR);
        assert_eq!(providers["ollama"]["models"][0]["cost"]["output"], 1.5);
        let oc = agent_config("opencode_local", &on(Some("s-1"), (0.0, 0.0))).unwrap();
        let content = oc["env"]["OPENCODE_CONFIG_CONTENT"].as_str().unwrap();
        assert!(content.contains("{env:LOCAL_MODEL_API_KEY}"), "{content}");
        assert_eq!(oc["model"], "ollama/qwen3:8b");
        assert!(agent_config("claude_local", &on(None, (0.0, 0.0))).is_none());
    }
}
