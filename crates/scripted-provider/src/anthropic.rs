//! The Anthropic Messages API as Claude Code uses it: `POST /v1/messages`
//! streamed as SSE (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`), plus `count_tokens`.
//!
//! Which requests are the conversation: Claude Code also sends small
//! requests of its own (titles, topic checks, quota probes). Those carry no
//! `tools`; the agent's turns always offer its tools. Tool-less requests are
//! answered with a short text and do not consume the script.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State as AxumState;
use axum::response::{IntoResponse, Response};
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
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
}

async fn count_tokens(
    AxumState(state): AxumState<Arc<State>>,
    Json(body): Json<Value>,
) -> Json<Value> {
    let tokens = estimate_tokens(&body);
    state.record(
        Api::AnthropicMessages,
        "/v1/messages/count_tokens",
        body,
        None,
    );
    Json(json!({ "input_tokens": tokens }))
}

async fn messages(AxumState(state): AxumState<Arc<State>>, Json(body): Json<Value>) -> Response {
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
        .unwrap_or("claude-sonnet-4-5")
        .to_string();
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let estimate = estimate_tokens(&body);
    state.record(
        Api::AnthropicMessages,
        "/v1/messages",
        body,
        is_turn.then(|| turn.clone()),
    );
    let (blocks, stop_reason) = match &turn {
        Turn::Error { status, message } => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            return json_error(
                *status,
                json!({ "type": "error", "error": { "type": kind, "message": message } }),
            );
        }
        Turn::Answer { text } => (vec![json!({ "type": "text", "text": text })], "end_turn"),
        Turn::Bash { command } => (
            vec![json!({
                "type": "tool_use",
                "id": next_id("toolu"),
                "name": "Bash",
                "input": { "command": command, "description": "Run the scripted command" },
            })],
            "tool_use",
        ),
        Turn::Tool { name, input } => (
            vec![
                json!({ "type": "tool_use", "id": next_id("toolu"), "name": name, "input": input }),
            ],
            "tool_use",
        ),
        Turn::Hang => (Vec::new(), "end_turn"),
    };
    let usage = state.usage(
        is_turn,
        TurnUsage {
            input_tokens: estimate,
            cached_input_tokens: 0,
            output_tokens: 12 + blocks.len() as u64 * 20,
        },
    );
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let (input_tokens, output_tokens) = (usage.input_tokens - cached, usage.output_tokens);
    let usage = json!({
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": output_tokens,
    });
    let id = next_id("msg");
    if !stream {
        return Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": blocks, "stop_reason": stop_reason, "stop_sequence": null, "usage": usage,
        }))
        .into_response();
    }
    let mut frames = vec![frame(
        Some("message_start"),
        &json!({ "type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                       "cache_read_input_tokens": cached, "output_tokens": 1 },
        }}),
    )];
    if matches!(turn, Turn::Hang) {
        return response(frames, true);
    }
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("text") => (
                json!({ "type": "text", "text": "" }),
                json!({ "type": "text_delta", "text": block["text"] }),
            ),
            _ => (
                json!({ "type": "tool_use", "id": block["id"], "name": block["name"], "input": {} }),
                json!({ "type": "input_json_delta", "partial_json": block["input"].to_string() }),
            ),
        };
        frames.push(frame(
            Some("content_block_start"),
            &json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        frames.push(frame(
            Some("content_block_delta"),
            &json!({ "type": "content_block_delta", "index": index, "delta": delta }),
        ));
        frames.push(frame(
            Some("content_block_stop"),
            &json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    frames.push(frame(
        Some("message_delta"),
        &json!({ "type": "message_delta",
                 "delta": { "stop_reason": stop_reason, "stop_sequence": null },
                 "usage": { "output_tokens": output_tokens } }),
    ));
    frames.push(frame(
        Some("message_stop"),
        &json!({ "type": "message_stop" }),
    ));
    response(frames, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tool_turn_is_a_tool_use_of_that_name_and_input() {
        let state = Arc::new(State::default());
        state.turns.lock().unwrap().push_back(Turn::Tool {
            name: "mcp__paperclip__create_task".into(),
            input: json!({ "title": "Ship it" }),
        });
        let body =
            json!({ "model": "claude-sonnet-4-5", "tools": [{ "name": "Bash" }], "messages": [] });
        state
            .rate_limits
            .lock()
            .unwrap()
            .replace(crate::RateLimits {
                five_hour: Some(crate::RateWindow {
                    utilization: 0.78,
                    resets_at: 1796666232,
                }),
                seven_day: None,
            });
        let r = messages(AxumState(state.clone()), Json(body)).await;
        assert_eq!(
            r.headers()["anthropic-ratelimit-unified-5h-utilization"],
            "0.78"
        );
        assert_eq!(
            r.headers()["anthropic-ratelimit-unified-representative-claim"],
            "five_hour"
        );
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        let message: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(message["content"][0]["type"], "tool_use");
        assert_eq!(message["content"][0]["name"], "mcp__paperclip__create_task");
        assert_eq!(
            message["content"][0]["input"],
            json!({ "title": "Ship it" })
        );
        // As a script's JSON, too.
        let turn: Turn =
            serde_json::from_value(json!({ "kind": "tool", "name": "x", "input": { "a": 1 } }))
                .unwrap();
        assert_eq!(
            turn,
            Turn::Tool {
                name: "x".into(),
                input: json!({ "a": 1 })
            }
        );
    }
}
