//! Paperclip as an MCP server: the Model Context Protocol (revisions
//! 2025-06-18 and 2025-03-26) over streamable HTTP at `/api/mcp`, so the
//! assistants people already use (Claude Code, Codex, any MCP client) read,
//! search and delegate tasks as the person behind the request.
//!
//! Every `POST` carries one JSON-RPC message (or a small batch) and is
//! answered with `application/json`, which streamable HTTP allows; the server
//! never starts a stream of its own, so `GET` is a 405. The JSON-RPC types
//! are ours rather than `rmcp`'s: its server side needs `schemars`, its
//! macros and a session layer of its own, all to answer five methods, while
//! the tools here are thin over the REST routes (see [`rest`]).
//!
//! Who may: a person (a board API key or session on an authenticated
//! instance, where an administrator must first turn MCP on with `--mcp`) or
//! the local board of a local trusted instance. Agents are refused: they have
//! their own API and their key acts as the agent, not a person.

mod rest;
mod tools;
mod tools_write;

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::AppState;

/// The revisions this server speaks, newest first; an unknown one asked for
/// is answered with the newest (the client then decides whether to go on).
const VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

/// A batch longer than this is refused whole: each entry may be a tool call.
const MAX_BATCH: usize = 20;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(mcp))
}

/// One JSON-RPC message from the client.
#[derive(Debug, Deserialize)]
struct Message {
    jsonrpc: Option<String>,
    /// Absent on a notification.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    method: Option<String>,
    params: Option<Value>,
}

/// Tells `"id": null` (a request with a null id, which JSON-RPC allows but
/// MCP does not) from no `id` at all (a notification).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Serialize)]
struct Reply {
    jsonrpc: &'static str,
    id: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<RpcError>,
}

/// A JSON-RPC error: `-32700` parse, `-32600` invalid request, `-32601`
/// unknown method, `-32602` bad params (with the field in `data.path`).
#[derive(Debug, Serialize)]
pub(crate) struct RpcError {
    code: i64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

impl RpcError {
    pub(crate) fn invalid_params(message: impl Into<String>, path: &[&str]) -> RpcError {
        RpcError {
            code: -32602,
            message: message.into(),
            data: Some(json!({ "path": path })),
        }
    }

    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

fn reply(id: Value, outcome: Result<Value, RpcError>) -> Reply {
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    Reply {
        jsonrpc: "2.0",
        id,
        result,
        error,
    }
}

/// The MCP endpoint (streamable HTTP, JSON responses). A request gets its
/// JSON-RPC response; notifications and client responses get 202 and no
/// body; `GET` is 405, as no server-initiated stream is offered.
#[utoipa::path(post, path = "/api/mcp", tag = "mcp",
    request_body(content = Object, description = "A JSON-RPC 2.0 message (or batch) of the Model Context Protocol"),
    responses((status = 200, description = "The JSON-RPC response", body = Object),
        (status = 202, description = "A notification, accepted"),
        (status = 400, description = "Not JSON-RPC", body = Object),
        (status = 401, description = "No valid credential", body = crate::error::ErrorBody),
        (status = 403, description = "An agent's credential, or MCP is off on this instance", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn mcp(State(app): State<AppState>, request: Request) -> Response {
    if app.security.team.authenticated() && !app.security.team.mcp {
        return ApiError::forbidden(
            "MCP is off on this instance: an administrator turns it on with `paperclip run --mcp` \
             (or PAPERCLIP_MCP_ENABLED=true)",
        )
        .with_details(json!({ "code": "mcp_disabled" }))
        .into_response();
    }
    let (mut parts, body) = request.into_parts();
    let caller = match Caller::from_request_parts(&mut parts, &app).await {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    if caller.agent_id().is_some() {
        return ApiError::forbidden(
            "MCP is for people: an agent's key acts as the agent; agents use the API directly",
        )
        .with_details(json!({ "code": "mcp_people_only" }))
        .into_response();
    }
    let bytes = match axum::body::to_bytes(body, crate::MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
                .into_response()
        }
    };
    let rest = rest::Rest::new(app, &parts);
    handle(&rest, &bytes).await
}

async fn handle(rest: &rest::Rest, bytes: &Bytes) -> Response {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            let err = RpcError::new(-32700, format!("Parse error: {e}"));
            return (StatusCode::BAD_REQUEST, Json(reply(Value::Null, Err(err)))).into_response();
        }
    };
    match value {
        Value::Array(batch) => {
            if batch.is_empty() || batch.len() > MAX_BATCH {
                let err = RpcError::new(
                    -32600,
                    format!(
                        "A batch holds 1 to {MAX_BATCH} messages, not {}",
                        batch.len()
                    ),
                );
                return (StatusCode::BAD_REQUEST, Json(reply(Value::Null, Err(err))))
                    .into_response();
            }
            let mut replies = Vec::new();
            for message in batch {
                if let Some(r) = one(rest, message).await {
                    replies.push(r);
                }
            }
            if replies.is_empty() {
                return StatusCode::ACCEPTED.into_response();
            }
            Json(replies).into_response()
        }
        message => match one(rest, message).await {
            Some(r) if r.error.as_ref().is_some_and(|e| e.code == -32600) => {
                (StatusCode::BAD_REQUEST, Json(r)).into_response()
            }
            Some(r) => Json(r).into_response(),
            None => StatusCode::ACCEPTED.into_response(),
        },
    }
}

/// Answers one message; `None` for a notification or a client's response.
async fn one(rest: &rest::Rest, value: Value) -> Option<Reply> {
    let message: Message = match serde_json::from_value(value) {
        Ok(m) => m,
        Err(e) => {
            let err = RpcError::new(-32600, format!("Invalid request: {e}"));
            return Some(reply(Value::Null, Err(err)));
        }
    };
    if message.jsonrpc.as_deref() != Some("2.0") {
        let id = message.id.unwrap_or(Value::Null);
        return Some(reply(
            id,
            Err(RpcError::new(-32600, "jsonrpc must be \"2.0\"")),
        ));
    }
    let Some(method) = message.method else {
        // A response to a request of ours; we send none, so there is nothing to match.
        return None;
    };
    // No id: a notification, owed no answer.
    let id = message.id?;
    if !matches!(id, Value::String(_) | Value::Number(_)) {
        return Some(reply(
            Value::Null,
            Err(RpcError::new(-32600, "id must be a string or a number")),
        ));
    }
    let params = match message.params {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Some(reply(
                id,
                Err(RpcError::invalid_params(
                    "params must be an object",
                    &["params"],
                )),
            ))
        }
    };
    let outcome = match method.as_str() {
        "initialize" => Ok(initialize(rest, &params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools::list() })),
        "tools/call" => tools::call(rest, params).await,
        other => Err(RpcError::new(-32601, format!("Method not found: {other}"))),
    };
    Some(reply(id, outcome))
}

fn initialize(rest: &rest::Rest, params: &serde_json::Map<String, Value>) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = VERSIONS
        .iter()
        .find(|v| Some(**v) == asked)
        .unwrap_or(&VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": {
            "name": "paperclip",
            "title": "Paperclip",
            "version": rest.version(),
        },
        "instructions": "Paperclip is the control plane of a company of AI agents. These tools act \
            as you, within your role: list and search tasks, read one with its thread, create and \
            assign tasks, comment, answer a card, decide an approval, read a run's outcome. Tasks \
            are named by identifier (ACM-12).",
    })
}

#[cfg(test)]
mod tests {
    use super::rest::Refusal;
    use super::tools::{check_limit, decode, nul_at, Failed};
    use super::*;

    #[test]
    fn bad_arguments_name_their_field() {
        #[derive(Debug, Deserialize)]
        struct Args {
            #[allow(dead_code)]
            title: String,
        }
        let err = decode::<Args>(json!({}), "arguments").unwrap_err();
        assert_eq!(
            (err.code, err.data.unwrap()),
            (-32602, json!({ "path": ["arguments", "title"] }))
        );
        let err = decode::<Args>(json!({ "title": 5 }), "arguments").unwrap_err();
        assert_eq!(err.data.unwrap()["path"], json!(["arguments", "title"]));
        let found = nul_at(
            &json!({ "a": ["ok", { "b": "x\u{0}" }] }),
            &mut vec!["arguments".into()],
        );
        assert_eq!(found.unwrap(), ["arguments", "a", "1", "b"]);
        assert!(nul_at(&json!({ "a": "\\u0000 is text" }), &mut vec![]).is_none());
        assert!(matches!(
            check_limit(Some(u64::MAX), 25, 1),
            Err(Failed::Params(_))
        ));
        assert!(matches!(
            check_limit(Some(0), 25, 1),
            Err(Failed::Params(_))
        ));
        assert!(matches!(check_limit(None, 25, 1), Ok(25)));
    }

    #[test]
    fn a_refusal_says_why_in_words() {
        let viewer = Refusal {
            status: StatusCode::FORBIDDEN,
            body: json!({ "error": "Viewer access is read-only",
                          "details": { "reason": "deny_viewer", "permission": "issue:mutate" } }),
        };
        let text = viewer.sentence();
        assert!(
            text.starts_with("Viewer access is read-only (403)"),
            "{text}"
        );
        assert!(
            text.contains("needs a role") && text.contains("issue:mutate"),
            "{text}"
        );
        let invalid = Refusal {
            status: StatusCode::BAD_REQUEST,
            body: json!({ "error": "Validation error",
                          "details": [{ "path": ["status"], "message": "Invalid option" }] }),
        };
        assert_eq!(
            invalid.sentence(),
            "Validation error (400): status: Invalid option"
        );
    }
}
