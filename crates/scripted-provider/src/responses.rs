//! The OpenAI Responses API as Codex uses it: `POST /v1/responses` with
//! `stream: true`, answered with `response.created`,
//! `response.output_item.added|done`, `response.output_text.delta` and
//! `response.completed` (with usage).
//!
//! Which requests are the conversation: the agent's turns offer Codex's
//! tools (`exec_command`, ...); requests without tools (titles, summaries)
//! get a short text and do not consume the script.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State as AxumState;
use axum::response::Response;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::sse::{estimate_tokens, frame, json_error, response, with_headers};
use crate::{Api, State, Turn, TurnUsage};

static IDS: AtomicU64 = AtomicU64::new(1);

fn next_id(prefix: &str) -> String {
    format!("{prefix}_{:016}", IDS.fetch_add(1, Ordering::Relaxed))
}

pub(crate) fn routes() -> Router<Arc<State>> {
    Router::new().route("/v1/responses", post(responses))
}

/// The shell tool Codex offers, and how its arguments are shaped.
fn shell_call(body: &Value, command: &str) -> (String, String) {
    let names: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if names.contains(&"exec_command") {
        ("exec_command".into(), json!({ "cmd": command }).to_string())
    } else if names.contains(&"shell_command") {
        (
            "shell_command".into(),
            json!({ "command": command }).to_string(),
        )
    } else {
        (
            "shell".into(),
            json!({ "command": ["bash", "-lc", command] }).to_string(),
        )
    }
}

async fn responses(AxumState(state): AxumState<Arc<State>>, Json(body): Json<Value>) -> Response {
    let limits = state.rate_limit_headers();
    with_headers(answer(&state, body), &limits)
}

fn answer(state: &State, body: Value) -> Response {
    let is_turn = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    let turn = if is_turn {
        state.next_turn()
    } else {
        Turn::Answer {
            text: "Side request answered by the scripted provider.".into(),
        }
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("gpt-5")
        .to_string();
    let estimate = estimate_tokens(&body);
    let usage = state.usage(
        is_turn,
        TurnUsage {
            input_tokens: estimate,
            cached_input_tokens: estimate / 2,
            output_tokens: 25,
        },
    );
    let (input_tokens, output_tokens) = (usage.input_tokens, usage.output_tokens);
    let call = match &turn {
        Turn::Bash { command } => Some(shell_call(&body, command)),
        Turn::Tool { name, input } => Some((name.clone(), input.to_string())),
        _ => None,
    };
    state.record(
        Api::OpenAiResponses,
        "/v1/responses",
        body,
        is_turn.then(|| turn.clone()),
    );
    if let Turn::Error { status, message } = &turn {
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
    let id = next_id("resp");
    let mut frames = vec![frame(
        Some("response.created"),
        &json!({ "type": "response.created", "response": {
            "id": id, "object": "response", "status": "in_progress", "model": model, "output": [] } }),
    )];
    if matches!(turn, Turn::Hang) {
        return response(frames, true);
    }
    let item = match (&turn, call) {
        (_, Some((name, arguments))) => json!({
            "type": "function_call", "id": next_id("fc"), "call_id": next_id("call"),
            "name": name, "arguments": arguments, "status": "completed",
        }),
        (Turn::Answer { text }, None) => json!({
            "type": "message", "id": next_id("msg"), "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }],
        }),
        _ => unreachable!("errors and hangs returned above"),
    };
    frames.push(frame(
        Some("response.output_item.added"),
        &json!({ "type": "response.output_item.added", "output_index": 0, "item": item }),
    ));
    if let Some(text) = item.pointer("/content/0/text") {
        frames.push(frame(
            Some("response.output_text.delta"),
            &json!({ "type": "response.output_text.delta", "item_id": item["id"],
                     "output_index": 0, "content_index": 0, "delta": text }),
        ));
    }
    frames.push(frame(
        Some("response.output_item.done"),
        &json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
    ));
    frames.push(frame(
        Some("response.completed"),
        &json!({ "type": "response.completed", "response": {
            "id": id, "object": "response", "status": "completed", "model": model, "output": [item],
            "usage": {
                "input_tokens": input_tokens,
                "input_tokens_details": { "cached_tokens": usage.cached_input_tokens },
                "output_tokens": output_tokens,
                "output_tokens_details": { "reasoning_tokens": 0 },
                "total_tokens": input_tokens + output_tokens,
            } } }),
    ));
    response(frames, false)
}
