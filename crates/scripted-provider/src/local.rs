//! The provider posing as a local model server: Ollama's own API
//! (`GET /api/tags`, `GET /api/version`, `POST /api/show`) and the
//! OpenAI-compatible model list (`GET /v1/models`) that Ollama, LM Studio,
//! vLLM and llama.cpp's server all answer. Completions stay in [`crate::chat`].
//!
//! A test chooses the models the server lists. Once it has, a chat request
//! is checked against them the way Ollama does: an unlisted model is a 404
//! "try pulling it first", and a model without tool support refuses a
//! request that offers tools with a 400. The texts are Ollama's own, so an
//! adapter's classification is tested against what people will see.

use std::sync::{Arc, Mutex};

use axum::extract::State as AxumState;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::sse::json_error;
use crate::{Api, ScriptedProvider, State};

/// Which kind of server the provider poses as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Ollama: its `/api/*` routes and `/v1/models`.
    Ollama,
    /// A server with only the OpenAI-compatible API (LM Studio, vLLM,
    /// llama.cpp): `/v1/models`; `/api/*` is not found.
    OpenAiCompatible,
}

/// One model the server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModel {
    /// The name as the server lists it, e.g. `qwen3:8b`.
    pub name: String,
    /// Whether the model can call tools (Ollama's `tools` capability).
    pub tools: bool,
    /// The context window in tokens, as `/api/show` reports it.
    pub context_length: u64,
}

impl LocalModel {
    pub fn new(name: &str) -> LocalModel {
        LocalModel {
            name: name.to_string(),
            tools: true,
            context_length: 32_768,
        }
    }
}

#[derive(Default)]
pub(crate) struct Models {
    served: Mutex<Option<(Flavour, Vec<LocalModel>)>>,
}

impl Models {
    fn snapshot(&self) -> Option<(Flavour, Vec<LocalModel>)> {
        self.served.lock().unwrap().clone()
    }
}

/// Ollama names a model `name:tag`; a bare name means `name:latest`.
fn same_model(listed: &str, asked: &str) -> bool {
    let full = |n: &str| {
        if n.contains(':') {
            n.to_string()
        } else {
            format!("{n}:latest")
        }
    };
    full(listed) == full(asked)
}

fn find<'a>(models: &'a [LocalModel], asked: &str) -> Option<&'a LocalModel> {
    models.iter().find(|m| same_model(&m.name, asked))
}

/// The family reported for a model: its name without registry path or tag.
fn family(name: &str) -> String {
    let base = name.split(':').next().unwrap_or(name);
    base.rsplit('/').next().unwrap_or(base).to_string()
}

impl ScriptedProvider {
    /// Poses as Ollama listing `names` (all with tool support).
    pub fn serve_models(&self, names: &[&str]) {
        self.serve(Flavour::Ollama, names.iter().map(|n| LocalModel::new(n)));
    }

    /// Poses as an OpenAI-compatible server (LM Studio, vLLM) listing `names`.
    pub fn serve_openai_models(&self, names: &[&str]) {
        self.serve(
            Flavour::OpenAiCompatible,
            names.iter().map(|n| LocalModel::new(n)),
        );
    }

    /// Poses as `flavour` listing exactly `models`.
    pub fn serve(&self, flavour: Flavour, models: impl IntoIterator<Item = LocalModel>) {
        *self.state.local.served.lock().unwrap() = Some((flavour, models.into_iter().collect()));
    }

    /// Marks listed models as unable to call tools: a chat request for one
    /// of them that offers tools answers Ollama's 400.
    pub fn without_tools(&self, names: &[&str]) {
        if let Some((_, models)) = self.state.local.served.lock().unwrap().as_mut() {
            for m in models.iter_mut() {
                if names.iter().any(|n| same_model(&m.name, n)) {
                    m.tools = false;
                }
            }
        }
    }
}

pub(crate) fn routes() -> Router<Arc<State>> {
    Router::new()
        .route("/api/tags", get(tags))
        .route("/api/version", get(version))
        .route("/api/show", post(show))
        .route("/v1/models", get(openai_models))
}

/// Ollama's answer when it is not what the provider poses as.
fn not_served(path: &str) -> Response {
    json_error(404, json!({ "error": format!("no route for {path}") }))
}

fn ollama(state: &State) -> Option<Vec<LocalModel>> {
    match state.local.snapshot() {
        Some((Flavour::Ollama, models)) => Some(models),
        _ => None,
    }
}

async fn tags(AxumState(state): AxumState<Arc<State>>) -> Response {
    state.record(Api::Other, "/api/tags", Value::Null, None);
    let Some(models) = ollama(&state) else {
        return not_served("/api/tags");
    };
    let list: Vec<Value> = models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({
                "name": m.name, "model": m.name,
                "modified_at": "2025-01-01T00:00:00Z",
                "size": 1_000_000_000u64 + i as u64,
                "digest": format!("{:064x}", i + 1),
                "details": { "parent_model": "", "format": "gguf", "family": family(&m.name),
                             "families": [family(&m.name)], "parameter_size": "8B",
                             "quantization_level": "Q4_K_M" },
            })
        })
        .collect();
    Json(json!({ "models": list })).into_response()
}

async fn version(AxumState(state): AxumState<Arc<State>>) -> Response {
    state.record(Api::Other, "/api/version", Value::Null, None);
    if ollama(&state).is_none() {
        return not_served("/api/version");
    }
    Json(json!({ "version": "0.12.6" })).into_response()
}

async fn show(AxumState(state): AxumState<Arc<State>>, Json(body): Json<Value>) -> Response {
    let asked = body
        .get("model")
        .or_else(|| body.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    state.record(Api::Other, "/api/show", body, None);
    let Some(models) = ollama(&state) else {
        return not_served("/api/show");
    };
    let Some(m) = find(&models, &asked) else {
        return json_error(
            404,
            json!({ "error": format!("model '{asked}' not found") }),
        );
    };
    let arch = family(&m.name);
    let mut capabilities = vec!["completion"];
    if m.tools {
        capabilities.push("tools");
    }
    Json(json!({
        "modelfile": format!("FROM {}", m.name),
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": { "parent_model": "", "format": "gguf", "family": arch,
                     "families": [arch], "parameter_size": "8B", "quantization_level": "Q4_K_M" },
        "model_info": { "general.architecture": arch,
                        format!("{arch}.context_length"): m.context_length },
        "capabilities": capabilities,
        "modified_at": "2025-01-01T00:00:00Z",
    }))
    .into_response()
}

async fn openai_models(AxumState(state): AxumState<Arc<State>>) -> Response {
    state.record(Api::Other, "/v1/models", Value::Null, None);
    let Some((_, models)) = state.local.snapshot() else {
        return not_served("/v1/models");
    };
    let data: Vec<Value> = models
        .iter()
        .map(|m| json!({ "id": m.name, "object": "model", "created": 1_735_689_600u64, "owned_by": "library" }))
        .collect();
    Json(json!({ "object": "list", "data": data })).into_response()
}

/// Checks a chat request against the listed models as Ollama would; `None`
/// lets it through (also when the provider poses as no local server).
pub(crate) fn refuse_chat(state: &State, body: &Value) -> Option<Response> {
    let (_, models) = state.local.snapshot()?;
    let asked = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let error = |status: u16, message: String| {
        json_error(
            status,
            json!({ "error": { "message": message, "type": "api_error", "param": null, "code": null } }),
        )
    };
    let Some(model) = find(&models, asked) else {
        return Some(error(
            404,
            format!("model \"{asked}\" not found, try pulling it first"),
        ));
    };
    let offers_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if offers_tools && !model.tools {
        let full = if model.name.contains('/') {
            model.name.clone()
        } else {
            format!("registry.ollama.ai/library/{}", model.name)
        };
        return Some(error(400, format!("{full} does not support tools")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get_json(url: &str) -> (u16, Value) {
        http("GET", url, None).await
    }

    /// A minimal HTTP/1.1 client over a TCP stream, so the crate needs no
    /// client dependency for its own tests.
    async fn http(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.unwrap();
        let status = raw[9..12].parse().unwrap();
        let (_, payload) = raw.split_once("\r\n\r\n").unwrap();
        let json = serde_json::from_str(payload.trim()).unwrap_or(Value::String(payload.into()));
        (status, json)
    }

    #[tokio::test]
    async fn poses_as_ollama_and_checks_chat_requests() {
        let provider = ScriptedProvider::start([]).await;
        let base = provider.base_url();
        assert_eq!(get_json(&format!("{base}/api/tags")).await.0, 404);
        assert_eq!(get_json(&format!("{base}/v1/models")).await.0, 404);

        provider.serve_models(&["qwen3:8b", "gemma:2b"]);
        provider.without_tools(&["gemma:2b"]);
        let (status, tags) = get_json(&format!("{base}/api/tags")).await;
        assert_eq!(status, 200);
        let names: Vec<&str> = tags["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["qwen3:8b", "gemma:2b"]);
        assert_eq!(tags["models"][0]["details"]["family"], "qwen3");
        let (_, version) = get_json(&format!("{base}/api/version")).await;
        assert!(version["version"].is_string());
        let (_, models) = get_json(&format!("{base}/v1/models")).await;
        assert_eq!(models["data"][1]["id"], "gemma:2b");

        let (status, shown) = http(
            "POST",
            &format!("{base}/api/show"),
            Some(json!({"model": "qwen3:8b"})),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(shown["capabilities"], json!(["completion", "tools"]));
        assert_eq!(shown["model_info"]["qwen3.context_length"], 32_768);
        let (_, small) = http(
            "POST",
            &format!("{base}/api/show"),
            Some(json!({"name": "gemma:2b"})),
        )
        .await;
        assert_eq!(small["capabilities"], json!(["completion"]));
        let (status, _) = http(
            "POST",
            &format!("{base}/api/show"),
            Some(json!({"model": "nope"})),
        )
        .await;
        assert_eq!(status, 404);

        let chat_url = format!("{base}/v1/chat/completions");
        let chat = |model: &str, tools: bool| {
            let mut body = json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
            if tools {
                body["tools"] =
                    json!([{"type": "function", "function": {"name": "bash", "parameters": {}}}]);
            }
            http("POST", &chat_url, Some(body))
        };
        let (status, answer) = chat("qwen3:8b", true).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
        let (status, refused) = chat("gemma:2b", true).await;
        assert_eq!(status, 400);
        assert_eq!(
            refused["error"]["message"],
            "registry.ollama.ai/library/gemma:2b does not support tools"
        );
        let (status, _) = chat("gemma:2b", false).await;
        assert_eq!(
            status, 200,
            "a tool-less request to a tool-less model works"
        );
        let (status, missing) = chat("llama3", true).await;
        assert_eq!(status, 404);
        assert_eq!(
            missing["error"]["message"],
            "model \"llama3\" not found, try pulling it first"
        );
    }

    #[tokio::test]
    async fn poses_as_an_openai_compatible_server() {
        let provider = ScriptedProvider::start([]).await;
        let base = provider.base_url();
        provider.serve_openai_models(&["qwen2.5-coder-7b-instruct"]);
        let (status, models) = get_json(&format!("{base}/v1/models")).await;
        assert_eq!(status, 200);
        assert_eq!(models["data"][0]["id"], "qwen2.5-coder-7b-instruct");
        assert_eq!(get_json(&format!("{base}/api/tags")).await.0, 404);
    }

    #[test]
    fn names_match_as_ollama_resolves_them() {
        assert!(same_model("llama3:latest", "llama3"));
        assert!(same_model("llama3", "llama3:latest"));
        assert!(!same_model("llama3:8b", "llama3"));
        assert_eq!(family("qwen3:8b"), "qwen3");
        assert_eq!(family("hf.co/x/gemma2:2b"), "gemma2");
    }
}
