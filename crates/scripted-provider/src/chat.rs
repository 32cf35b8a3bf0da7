//! The OpenAI chat-completions API as OpenCode's `@ai-sdk/openai-compatible`
//! provider uses it: `POST /v1/chat/completions` with `stream: true`,
//! answered with `data:` chunks of `choices[0].delta`, a last chunk with
//! `finish_reason` and `usage`, then `data: [DONE]`.
//!
//! Which requests are the conversation: OpenCode first asks for a session
//! title ("Generate a title for this conversation") without tools; the
//! agent's turns always offer its tools (`bash`, `edit`, ...). Tool-less
//! requests get a short title and do not consume the script.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State as AxumState;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::sse::{estimate_tokens, frame, json_error, response};
use crate::{Api, State, Turn, TurnUsage};

static IDS: AtomicU64 = AtomicU64::new(1);

fn next_id(prefix: &str) -> String {
    format!("{prefix}-{:016}", IDS.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn routes() -> Router<Arc<State>> {
    Router::new().route("/v1/chat/completions", post(completions))
}

/// The name of the shell tool the CLI offers (OpenCode calls it `bash`).
fn shell_tool(body: &Value) -> String {
    let names: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    ["bash", "shell", "Bash"]
        .into_iter()
        .find(|n| names.contains(n))
        .unwrap_or("bash")
        .to_string()
}

async fn completions(AxumState(state): AxumState<Arc<State>>, Json(body): Json<Value>) -> Response {
    if let Some(refused) = crate::local::refuse_chat(&state, &body) {
        state.record(Api::ChatCompletions, "/v1/chat/completions", body, None);
        return refused;
    }
    let is_turn = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let turn = if is_turn {
        state.next_turn()
    } else {
        Turn::Answer {
            text: "Scripted session".into(),
        }
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock-model")
        .to_string();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let tool = shell_tool(&body);
    let estimate = estimate_tokens(&body);
    let usage = state.usage(
        is_turn,
        TurnUsage {
            input_tokens: estimate,
            cached_input_tokens: estimate / 2,
            output_tokens: 20,
        },
    );
    let (prompt_tokens, completion_tokens) = (usage.input_tokens, usage.output_tokens);
    state.record(
        Api::ChatCompletions,
        "/v1/chat/completions",
        body,
        is_turn.then(|| turn.clone()),
    );
    let id = next_id("chatcmpl");
    let created = 1_700_000_000u64;
    let chunk = |delta: Value, finish: Value| {
        json!({ "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
    };
    let (delta, finish, message) = match &turn {
        Turn::Error { status, message } => {
            let code = match status {
                404 => "model_not_found",
                401 => "invalid_api_key",
                429 => "rate_limit_exceeded",
                _ => "invalid_request_error",
            };
            return json_error(
                *status,
                json!({ "error": { "message": message, "type": "invalid_request_error", "param": null, "code": code } }),
            );
        }
        Turn::Hang => {
            let first = frame(
                None,
                &chunk(json!({ "role": "assistant", "content": "" }), Value::Null),
            );
            return response(vec![first], true);
        }
        Turn::Answer { text } => (
            json!({ "role": "assistant", "content": text }),
            "stop",
            json!({ "role": "assistant", "content": text }),
        ),
        Turn::Tool { name, input } => {
            let call = json!({
                "id": next_id("call"), "type": "function",
                "function": { "name": name, "arguments": input.to_string() },
            });
            let mut indexed = call.clone();
            indexed["index"] = json!(0);
            (
                json!({ "role": "assistant", "content": null, "tool_calls": [indexed] }),
                "tool_calls",
                json!({ "role": "assistant", "content": null, "tool_calls": [call] }),
            )
        }
        Turn::Bash { command } => {
            let call = json!({
                "id": next_id("call"), "type": "function",
                "function": { "name": tool,
                              "arguments": json!({ "command": command, "description": "Run the scripted command" }).to_string() },
            });
            let mut indexed = call.clone();
            indexed["index"] = json!(0);
            (
                json!({ "role": "assistant", "content": null, "tool_calls": [indexed] }),
                "tool_calls",
                json!({ "role": "assistant", "content": null, "tool_calls": [call] }),
            )
        }
    };
    let usage = json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": { "cached_tokens": usage.cached_input_tokens },
    });
    if !stream {
        return Json(json!({
            "id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
            "usage": usage,
        }))
        .into_response();
    }
    let mut last = chunk(json!({}), json!(finish));
    last["usage"] = usage;
    let frames = vec![
        frame(None, &chunk(delta, Value::Null)),
        frame(None, &last),
        Bytes::from_static(b"data: [DONE]\n\n"),
    ];
    response(frames, false)
}
