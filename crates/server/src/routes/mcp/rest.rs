//! The tools go through the REST routes themselves, in process: the same
//! handlers, extractors, role checks and store flows (so the same activity
//! rows, wakes and rules) as the board and the CLI, with the credential of
//! the MCP request. Nothing about a write is decided twice.

use axum::body::Body;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;
use utoipa_axum::router::OpenApiRouter;

use crate::guard::LocalBoard;
use crate::AppState;

/// An answer bigger than this is not read (a tool result is bounded anyway).
const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

pub(crate) struct Rest {
    router: Router,
    headers: HeaderMap,
    local_board: bool,
    version: &'static str,
}

/// A REST call that did not succeed, as the API answered it.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub body: Value,
}

impl Refusal {
    /// The API's reason in words, with the failing fields of a validation
    /// error and what a role lacks.
    pub fn sentence(&self) -> String {
        let message = self.body["error"]
            .as_str()
            .unwrap_or_else(|| self.status.canonical_reason().unwrap_or("Failed"))
            .to_string();
        let details = &self.body["details"];
        let mut text = format!("{message} ({})", self.status.as_u16());
        if let Some(fields) = details.as_array() {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| {
                    let path: Vec<String> = f["path"]
                        .as_array()
                        .map(|p| {
                            p.iter()
                                .map(|s| s.as_str().map_or(s.to_string(), str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    let msg = f["message"].as_str().unwrap_or("invalid");
                    match path.is_empty() {
                        true => msg.to_string(),
                        false => format!("{}: {msg}", path.join(".")),
                    }
                })
                .collect();
            if !parts.is_empty() {
                text.push_str(": ");
                text.push_str(&parts.join("; "));
            }
        }
        if self.status == StatusCode::FORBIDDEN {
            if let Some(permission) = details["permission"].as_str() {
                text.push_str(&format!(
                    ". This needs a role that may do it (the {permission} permission); ask an owner of the company."
                ));
            }
        }
        text
    }
}

impl Rest {
    pub fn new(app: AppState, parts: &Parts) -> Rest {
        let version = app.info.version;
        // Only the routes the tools use: cheap to build per MCP request.
        let (router, _) = OpenApiRouter::new()
            .merge(super::super::companies::router())
            .merge(super::super::agents::router())
            .merge(super::super::projects::router())
            .merge(super::super::issues::router())
            .merge(super::super::comments::router())
            .merge(super::super::interactions::router())
            .merge(super::super::approvals::router())
            .merge(super::super::heartbeats::router())
            .split_for_parts();
        let mut headers = HeaderMap::new();
        // The credential (a board key, or a session with its CSRF token) and
        // a board run id pass through; the body's own headers do not.
        for (name, value) in &parts.headers {
            let keep = *name == AUTHORIZATION
                || *name == COOKIE
                || name.as_str().starts_with("x-paperclip-")
                || name.as_str().contains("csrf");
            if keep {
                headers.append(name.clone(), value.clone());
            }
        }
        Rest {
            router: router.with_state(app),
            headers,
            local_board: parts.extensions.get::<LocalBoard>().is_some(),
            version,
        }
    }

    pub fn version(&self) -> &'static str {
        self.version
    }

    pub async fn get(&self, path: &str) -> Result<Value, Refusal> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value, Refusal> {
        self.send(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Result<Value, Refusal> {
        self.send(Method::PATCH, path, Some(body)).await
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Refusal> {
        let refusal = |status: StatusCode, message: &str| Refusal {
            status,
            body: serde_json::json!({ "error": message }),
        };
        let body = match body {
            Some(v) => Body::from(v.to_string()),
            None => Body::empty(),
        };
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, "localhost")
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|_| refusal(StatusCode::BAD_REQUEST, "Not a valid path"))?;
        request.headers_mut().extend(self.headers.clone());
        if self.local_board {
            request.extensions_mut().insert(LocalBoard);
        }
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .map_err(|_| refusal(StatusCode::INTERNAL_SERVER_ERROR, "Internal error"))?;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES)
            .await
            .map_err(|_| refusal(StatusCode::INTERNAL_SERVER_ERROR, "Answer too large"))?;
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            Ok(value)
        } else {
            Err(Refusal {
                status,
                body: value,
            })
        }
    }
}

/// A path segment or query value made safe for a URI.
pub(crate) fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
