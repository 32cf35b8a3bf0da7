//! The Gemini API as the `gemini` CLI (0.61) calls it when
//! `GOOGLE_GEMINI_BASE_URL` points here:
//! `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (SSE, one
//! `GenerateContentResponse` per `data:` frame), `:generateContent` (one
//! JSON answer) and `:countTokens`; `GET /v1beta/models` lists
//! [`LISTED`] to a caller with a key, as a hire form's model list asks.
//!
//! Which requests are the conversation: the CLI's agent turns always offer
//! its tools (`functionDeclarations`); its own small requests (the next
//! speaker check, loop detection, the model router, titles) carry none and
//! usually ask for JSON of a given schema. Those are answered with a value
//! of that schema and do not consume the script.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::{Path, State as AxumState};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};

use crate::sse::{estimate_tokens, frame, json_error, response};
use crate::{Api, State, Turn, TurnUsage};

static IDS: AtomicU64 = AtomicU64::new(1);

fn next_id() -> String {
    format!("resp-{:016}", IDS.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn routes() -> Router<Arc<State>> {
    // One segment holds `model:method` (Google's custom-method syntax).
    Router::new()
        .route("/v1beta/models", get(list))
        .route("/v1beta/models/{call}", post(call))
}

/// What `GET /v1beta/models` lists: model id, display name, whether it
/// generates content (an embedding model does not, and a form offering
/// it would offer a model that cannot run an agent).
pub const LISTED: &[(&str, &str, bool)] = &[
    ("gemini-2.5-flash", "Gemini 2.5 Flash", true),
    ("gemini-2.5-pro", "Gemini 2.5 Pro", true),
    (
        "gemini-2.5-flash-preview-09-2025",
        "Gemini 2.5 Flash Preview Sep 2025",
        true,
    ),
    ("text-embedding-004", "Text Embedding 004", false),
];

/// Google's `ListModels`: `{models: [{name: "models/<id>", displayName,
/// supportedGenerationMethods}]}`. Like Google, it refuses a caller
/// without a key (`x-goog-api-key` or `?key=`) with a 403.
async fn list(AxumState(state): AxumState<Arc<State>>, headers: HeaderMap, uri: Uri) -> Response {
    state.record(Api::Gemini, uri.path(), Value::Null, None);
    let keyed = headers.get("x-goog-api-key").is_some_and(|k| !k.is_empty())
        || uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("key=") && p.len() > 4));
    if !keyed {
        return json_error(
            403,
            google_error(403, "Method doesn't allow unregistered callers."),
        );
    }
    let models: Vec<Value> = LISTED
        .iter()
        .map(|(id, name, generates)| {
            let methods: &[&str] = if *generates {
                &["generateContent", "countTokens"]
            } else {
                &["embedContent"]
            };
            json!({ "name": format!("models/{id}"), "displayName": name,
                    "supportedGenerationMethods": methods })
        })
        .collect();
    Json(json!({ "models": models })).into_response()
}

/// The name of the CLI's shell tool among the offered declarations.
fn shell_tool(body: &Value) -> String {
    let names = declared_tools(body);
    ["run_shell_command", "shell", "bash"]
        .into_iter()
        .find(|n| names.iter().any(|d| d == n))
        .unwrap_or("run_shell_command")
        .to_string()
}

fn declared_tools(body: &Value) -> Vec<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("functionDeclarations").and_then(Value::as_array))
        .flatten()
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

async fn call(
    AxumState(state): AxumState<Arc<State>>,
    Path(call): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    let (model, method) = call.rsplit_once(':').unwrap_or((call.as_str(), ""));
    let path = format!("/v1beta/models/{call}");
    match method {
        "streamGenerateContent" => generate(&state, &path, model, body, true),
        "generateContent" => generate(&state, &path, model, body, false),
        "countTokens" => {
            let tokens = estimate_tokens(&body);
            state.record(Api::Gemini, &path, body, None);
            Json(json!({ "totalTokens": tokens })).into_response()
        }
        _ => {
            state.record(Api::Gemini, &path, body, None);
            json_error(
                404,
                google_error(404, &format!("Method {method} not found")),
            )
        }
    }
}

/// Google's error body: `{"error":{"code","message","status","details"}}`.
pub fn google_error(code: u16, message: &str) -> Value {
    let status = match code {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    let mut error = json!({ "code": code, "message": message, "status": status });
    if code == 429 {
        // Google says when to come back in a RetryInfo; the CLI gives up at
        // once (a terminal quota error) when that is over five minutes.
        error["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": retry_delay(message),
        }]);
    }
    json!({ "error": error })
}

/// The delay a 429's message names ("Please retry in 3600s."), as Google's
/// `Duration` JSON; an hour when it names none.
fn retry_delay(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    lower
        .split_once("retry in ")
        .map(|(_, rest)| {
            rest.chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .map(|n| format!("{}s", n.trim_end_matches('.')))
        .unwrap_or_else(|| "3600s".into())
}

/// A value of a side request's response schema (JSON Schema or Google's
/// OpenAPI subset): the first enum value, plain scalars (numbers at their
/// minimum, else 1: the model router's complexity score must be 1 to 100),
/// every object property filled in.
fn value_of_schema(schema: &Value) -> Value {
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object")
        .to_ascii_lowercase();
    match kind.as_str() {
        "string" => json!("Side request answered by the scripted provider."),
        // Scores are validated as 1..: the smallest allowed, else 1.
        "number" | "integer" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    out.insert(name.clone(), value_of_schema(prop));
                }
            }
            Value::Object(out)
        }
    }
}

fn side_answer(body: &Value) -> String {
    let config = body.get("generationConfig").cloned().unwrap_or(Value::Null);
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"));
    match schema {
        Some(schema) => value_of_schema(schema).to_string(),
        None if config.get("responseMimeType").and_then(Value::as_str)
            == Some("application/json") =>
        {
            "{}".into()
        }
        None => "Side request answered by the scripted provider.".into(),
    }
}

fn generate(state: &State, path: &str, model: &str, body: Value, stream: bool) -> Response {
    let is_turn = !declared_tools(&body).is_empty();
    let turn = if is_turn {
        state.next_turn()
    } else {
        Turn::Answer {
            text: side_answer(&body),
        }
    };
    let tool = shell_tool(&body);
    let estimate = estimate_tokens(&body);
    state.record(Api::Gemini, path, body, is_turn.then(|| turn.clone()));
    let (parts, finish) = match &turn {
        Turn::Error { status, message } => {
            return json_error(*status, google_error(*status, message));
        }
        Turn::Answer { text } => (vec![json!({ "text": text })], "STOP"),
        Turn::Bash { command } => (
            vec![json!({ "functionCall": {
                "name": tool,
                "args": { "command": command, "description": "Run the scripted command" },
            }})],
            "STOP",
        ),
        Turn::Tool { name, input } => (
            vec![json!({ "functionCall": { "name": name, "args": input } })],
            "STOP",
        ),
        Turn::Hang => (Vec::new(), "STOP"),
    };
    let usage = state.usage(
        is_turn,
        TurnUsage {
            input_tokens: estimate,
            cached_input_tokens: 0,
            output_tokens: 12 + parts.len() as u64 * 20,
        },
    );
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let usage_metadata = json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "cachedContentTokenCount": cached,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    });
    let id = next_id();
    let answer = |parts: Vec<Value>, finish: Option<&str>, usage: Option<&Value>| {
        let mut candidate = json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        let mut out = json!({ "candidates": [candidate], "modelVersion": model, "responseId": id });
        if let Some(usage) = usage {
            out["usageMetadata"] = usage.clone();
        }
        out
    };
    if !stream {
        return Json(answer(parts, Some(finish), Some(&usage_metadata))).into_response();
    }
    if matches!(turn, Turn::Hang) {
        let first = frame(None, &answer(vec![json!({ "text": "" })], None, None));
        return response(vec![first], true);
    }
    // The parts first, then a last chunk with the finish reason and the
    // usage, as Google streams them.
    let frames = vec![
        frame(None, &answer(parts, None, None)),
        frame(
            None,
            &answer(
                vec![json!({ "text": "" })],
                Some(finish),
                Some(&usage_metadata),
            ),
        ),
    ];
    response(frames, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_googles_shape_and_a_retry_delay_for_quotas() {
        let e = google_error(404, "models/nope is not found");
        assert_eq!(e["error"]["status"], "NOT_FOUND");
        assert_eq!(e["error"]["code"], 404);
        let q = google_error(429, "Quota exceeded. Please retry in 7200s.");
        assert_eq!(q["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(q["error"]["details"][0]["retryDelay"], "7200s");
        assert_eq!(
            google_error(429, "Quota exceeded.")["error"]["details"][0]["retryDelay"],
            "3600s"
        );
        assert!(google_error(400, "too long")["error"]["details"].is_null());
    }

    #[test]
    fn side_requests_get_a_value_of_their_schema() {
        let body = json!({ "generationConfig": { "responseMimeType": "application/json",
            "responseJsonSchema": { "type": "object", "properties": {
                "reasoning": { "type": "string" },
                "next_speaker": { "type": "string", "enum": ["user", "model"] },
                "complexity_score": { "type": "INTEGER" } } } } });
        let v: Value = serde_json::from_str(&side_answer(&body)).unwrap();
        assert_eq!(v["next_speaker"], "user");
        assert_eq!(v["complexity_score"], 1);
        assert!(v["reasoning"].is_string());
        assert!(!side_answer(&json!({})).starts_with('{'));
    }

    async fn body_of(r: Response) -> String {
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn turns_stream_parts_then_the_finish_with_the_scripted_usage() {
        let state = State::default();
        state.turns.lock().unwrap().extend([
            Turn::Bash {
                command: "ls".into(),
            },
            Turn::Answer {
                text: "done".into(),
            },
        ]);
        *state.usage.lock().unwrap() = Some(TurnUsage {
            input_tokens: 100,
            cached_input_tokens: 40,
            output_tokens: 7,
        });
        let body =
            json!({ "tools": [{ "functionDeclarations": [{ "name": "run_shell_command" }] }] });
        let text = body_of(generate(
            &state,
            "/p",
            "gemini-2.5-flash",
            body.clone(),
            true,
        ))
        .await;
        let frames: Vec<Value> = text
            .split("\n\n")
            .filter_map(|f| f.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(frames.len(), 2, "{text}");
        let call = &frames[0]["candidates"][0]["content"]["parts"][0]["functionCall"];
        assert_eq!(call["name"], "run_shell_command");
        assert_eq!(call["args"]["command"], "ls");
        assert!(frames[0]["usageMetadata"].is_null());
        assert_eq!(frames[1]["candidates"][0]["finishReason"], "STOP");
        assert_eq!(
            frames[1]["usageMetadata"],
            json!({ "promptTokenCount": 100, "candidatesTokenCount": 7,
                    "cachedContentTokenCount": 40, "totalTokenCount": 107 })
        );
        let plain: Value =
            serde_json::from_str(&body_of(generate(&state, "/p", "m", body, false)).await).unwrap();
        assert_eq!(
            plain["candidates"][0]["content"]["parts"][0]["text"],
            "done"
        );
        assert_eq!(plain["usageMetadata"]["promptTokenCount"], 100);
        // A side request consumes nothing and reports the estimate.
        state.turns.lock().unwrap().push_back(Turn::Hang);
        let side: Value =
            serde_json::from_str(&body_of(generate(&state, "/p", "m", json!({}), false)).await)
                .unwrap();
        assert_ne!(side["usageMetadata"]["promptTokenCount"], 100);
        assert_eq!(state.turns.lock().unwrap().len(), 1);
        let turns: Vec<bool> = state
            .requests
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.turn.is_some())
            .collect();
        assert_eq!(turns, [true, true, false]);
    }

    #[tokio::test]
    async fn the_model_list_needs_a_key_and_names_models_as_google_does() {
        let state = Arc::new(State::default());
        let uri: Uri = "/v1beta/models?pageSize=1000".parse().unwrap();
        let refused = list(AxumState(state.clone()), HeaderMap::new(), uri.clone()).await;
        assert_eq!(refused.status(), 403);
        let mut headers = HeaderMap::new();
        headers.insert("x-goog-api-key", "k".parse().unwrap());
        let listed: Value = serde_json::from_str(
            &body_of(list(AxumState(state.clone()), headers, uri).await).await,
        )
        .unwrap();
        assert_eq!(listed["models"][0]["name"], "models/gemini-2.5-flash");
        assert_eq!(listed["models"].as_array().unwrap().len(), LISTED.len());
        let by_query = list(
            AxumState(state.clone()),
            HeaderMap::new(),
            "/v1beta/models?key=k".parse().unwrap(),
        )
        .await;
        assert_eq!(by_query.status(), 200);
        assert_eq!(state.requests.lock().unwrap().len(), 3);
    }

    #[test]
    fn the_shell_tool_is_found_among_declarations() {
        let body = json!({ "tools": [{ "functionDeclarations": [
            { "name": "read_file" }, { "name": "run_shell_command" } ] }] });
        assert_eq!(shell_tool(&body), "run_shell_command");
        assert_eq!(declared_tools(&json!({})).len(), 0);
    }
}
