//! Local model servers: Ollama found on the server's machine, and
//! OpenAI-compatible endpoints (LM Studio, vLLM, llama.cpp's server) the
//! board adds by URL. This module asks them which models they serve
//! ([`list_models`]), builds the config of an agent hired on one of them
//! ([`agent_config`]) and checks such an agent's environment ([`check`]).
//! Mechanism only: the server keeps the list of servers.
//!
//! Every request is bounded by a short timeout, and Ollama's detection is
//! cached for a few seconds, so a page asking for it never waits long.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

mod agent_config;
pub mod check;

pub use agent_config::{agent_config, HireOn, ADAPTER_TYPES, KEY_VAR};

/// Where Ollama listens unless told otherwise (its own default).
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";

/// How long detecting Ollama may take: a local server answers in
/// milliseconds, and nothing listening is refused at once.
const DETECT_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long listing a server's models may take (a remote GPU box).
const LIST_TIMEOUT: Duration = Duration::from_secs(4);
/// How long a detection is reused.
const DETECT_TTL: Duration = Duration::from_secs(5);

static OLLAMA_URL: OnceLock<String> = OnceLock::new();

/// Sets where Ollama is looked for (`--ollama-url`); the first call wins.
pub fn set_ollama_url(url: &str) {
    let _ = OLLAMA_URL.set(url.trim_end_matches('/').to_string());
}

/// `--ollama-url`, else `PAPERCLIP_OLLAMA_URL`, else Ollama's default.
pub fn ollama_url() -> String {
    if let Some(url) = OLLAMA_URL.get() {
        return url.clone();
    }
    std::env::var("PAPERCLIP_OLLAMA_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .unwrap_or_else(|| DEFAULT_OLLAMA_URL.to_string())
}

/// Which API a server speaks for listing models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Ollama,
    OpenAiCompatible,
}

/// One model a server lists.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LocalModel {
    pub id: String,
    /// What Ollama says of it (`8B Q4_K_M`), for the picker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What asking a server for its models found.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub reachable: bool,
    pub models: Vec<LocalModel>,
    /// Why the server could not be listed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Listing {
    fn failed(error: String) -> Listing {
        Listing {
            reachable: false,
            models: Vec::new(),
            error: Some(error),
        }
    }
}

pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(2)))
        // Local servers are on the machine or the LAN: never via a proxy.
        .no_proxy()
        .build()
        .unwrap_or_default()
}

/// A request's failure in words, without the URL's query or a key.
pub(crate) fn why(err: reqwest::Error) -> String {
    if err.is_timeout() {
        "no answer in time".into()
    } else if err.is_connect() {
        "nothing answers there (connection refused or unreachable)".into()
    } else if err.is_decode() {
        "its answer is not the JSON expected".into()
    } else {
        err.without_url().to_string()
    }
}

/// GETs `url` as JSON within `timeout`, with the key as a bearer token.
pub(crate) async fn get_json(
    url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Value, String> {
    let mut req = client(timeout).get(url);
    if let Some(key) = api_key {
        req = req.bearer_auth(key);
    }
    let res = req.send().await.map_err(why)?;
    let status = res.status();
    if !status.is_success() {
        let body = res.text().await.unwrap_or_default();
        return Err(format!("{url} answered {status}{}", brief(&body)));
    }
    res.json::<Value>().await.map_err(why)
}

/// `: <message>` from an error body (JSON `error` or text), short.
pub(crate) fn brief(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.get("error"))
                .or_else(|| v.get("message"))
        })
        .and_then(|m| m.as_str().map(str::to_string))
        .unwrap_or_else(|| body.trim().to_string());
    if message.is_empty() {
        String::new()
    } else {
        format!(": {}", message.chars().take(300).collect::<String>())
    }
}

/// The models `base_url` serves: Ollama's `/api/tags`, else `/v1/models`.
pub async fn list_models(flavour: Flavour, base_url: &str, api_key: Option<&str>) -> Listing {
    list_within(flavour, base_url, api_key, LIST_TIMEOUT).await
}

async fn list_within(
    flavour: Flavour,
    base_url: &str,
    api_key: Option<&str>,
    timeout: Duration,
) -> Listing {
    let base = base_url.trim_end_matches('/');
    let found = match flavour {
        Flavour::Ollama => get_json(&format!("{base}/api/tags"), api_key, timeout)
            .await
            .map(|v| ollama_models(&v)),
        Flavour::OpenAiCompatible => get_json(&format!("{base}/v1/models"), api_key, timeout)
            .await
            .map(|v| openai_models(&v)),
    };
    match found {
        Ok(models) => Listing {
            reachable: true,
            models,
            error: None,
        },
        Err(e) => Listing::failed(e),
    }
}

fn ollama_models(v: &Value) -> Vec<LocalModel> {
    let list = v.get("models").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|m| {
            let id = m.get("name").or_else(|| m.get("model"))?.as_str()?;
            let details = m.get("details");
            let part = |k: &str| details.and_then(|d| d.get(k)).and_then(Value::as_str);
            let detail = [part("parameter_size"), part("quantization_level")]
                .into_iter()
                .flatten()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            Some(LocalModel {
                id: id.to_string(),
                detail: (!detail.is_empty()).then_some(detail),
            })
        })
        .collect()
}

fn openai_models(v: &Value) -> Vec<LocalModel> {
    let list = v.get("data").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .filter_map(|m| {
            Some(LocalModel {
                id: m.get("id")?.as_str()?.to_string(),
                detail: None,
            })
        })
        .collect()
}

type Cached = (Instant, String, Listing);
static DETECTED: Mutex<Option<Cached>> = Mutex::new(None);

/// Ollama at [`ollama_url`], asked at most once per few seconds; a server
/// that is not there costs one refused connection.
pub async fn detect_ollama() -> (String, Listing) {
    let url = ollama_url();
    if let Some((at, cached_url, listing)) = DETECTED.lock().unwrap().as_ref() {
        if *cached_url == url && at.elapsed() < DETECT_TTL {
            return (url, listing.clone());
        }
    }
    let listing = list_within(Flavour::Ollama, &url, None, DETECT_TIMEOUT).await;
    *DETECTED.lock().unwrap() = Some((Instant::now(), url.clone(), listing.clone()));
    (url, listing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_lists_of_both_apis_are_read() {
        let tags = json!({ "models": [
            { "name": "qwen3:8b", "details": { "parameter_size": "8B", "quantization_level": "Q4_K_M" } },
            { "model": "gemma:2b" },
            { "size": 3 }
        ] });
        let models = ollama_models(&tags);
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].detail.as_deref(), Some("8B Q4_K_M"));
        assert_eq!(models[1].id, "gemma:2b");
        let list = json!({ "object": "list", "data": [{ "id": "qwen2.5-coder" }, { "x": 1 }] });
        assert_eq!(openai_models(&list)[0].id, "qwen2.5-coder");
        assert_eq!(openai_models(&json!({})).len(), 0);
    }

    #[test]
    fn error_bodies_are_brief() {
        assert_eq!(
            brief(r#"{"error":{"message":"no such model"}}"#),
            ": no such model"
        );
        assert_eq!(
            brief(r#"{"error":"model 'x' not found"}"#),
            ": model 'x' not found"
        );
        assert_eq!(brief(""), "");
    }

    #[tokio::test]
    async fn nothing_listening_is_unreachable_quickly() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let started = Instant::now();
        let listing = list_models(Flavour::Ollama, &format!("http://127.0.0.1:{port}"), None).await;
        assert!(!listing.reachable);
        assert!(listing.error.unwrap().contains("nothing answers"));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
