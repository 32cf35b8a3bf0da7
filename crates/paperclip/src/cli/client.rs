//! The HTTP side of the CLI: one reqwest client, errors turned into sentences
//! a person can act on (the server's own message and status, or how to start
//! the server when nothing answers).

use std::fmt;

use reqwest::{Method, StatusCode};
use serde_json::Value;

/// A failure the CLI reports as one line and exit code 1. It is not wrapped
/// in anyhow context chains, so the sentence reads as the server said it.
#[derive(Debug)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failure {}

/// Shorthand for a [`Failure`] as an `anyhow::Error`.
pub fn fail(message: impl Into<String>) -> anyhow::Error {
    Failure(message.into()).into()
}

pub struct Api {
    pub base: String,
    key: Option<String>,
    /// Sent as `X-Paperclip-Run-Id` with the key: an agent's writes name its run.
    run_id: Option<String>,
    http: reqwest::Client,
}

impl Api {
    pub fn new(base: &str, key: Option<String>, run_id: Option<String>) -> anyhow::Result<Api> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(fail(format!(
                "--api-base must be an http:// or https:// URL, not {base:?}"
            )));
        }
        let http = reqwest::Client::builder()
            // Long enough for a slow Postgres query, short enough that a
            // wedged server does not hang a script forever.
            .timeout(std::time::Duration::from_secs(60))
            .connect_timeout(std::time::Duration::from_secs(5))
            .build()?;
        Ok(Api {
            base,
            key: key.filter(|k| !k.is_empty()),
            run_id: run_id.filter(|r| !r.is_empty()),
            http,
        })
    }

    /// Whether requests carry an agent key (else they are the local board's).
    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send(Method::POST, path, Some(body)).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send(Method::PATCH, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> anyhow::Result<Value> {
        self.send(Method::DELETE, path, None).await
    }

    /// `subject` names what the person asked about (e.g. `ACM-99`) so a 404
    /// reads "ACM-99: no such task (404)" rather than a bare status.
    pub async fn get_about(&self, path: &str, subject: &str) -> anyhow::Result<Value> {
        self.get(path).await.map_err(|e| about(e, subject))
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}/api{}", self.base, path);
        let mut req = self.http.request(method.clone(), &url);
        if let Some(key) = &self.key {
            req = req.bearer_auth(key);
            if let Some(run) = &self.run_id {
                req = req.header("x-paperclip-run-id", run);
            }
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| self.transport(e))?;
        let value: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status.is_success() {
            Ok(value)
        } else {
            Err(fail(error_sentence(status, &value, &method, path)))
        }
    }

    fn transport(&self, err: reqwest::Error) -> anyhow::Error {
        if err.is_connect() {
            fail(format!(
                "cannot reach the server at {}: is `paperclip run` running? \
                 (or pass --api-base / set PAPERCLIP_API_URL)",
                self.base
            ))
        } else if err.is_timeout() {
            fail(format!(
                "the server at {} did not answer in time",
                self.base
            ))
        } else {
            fail(format!("talking to {}: {err}", self.base))
        }
    }
}

/// The server's `{"error": ..., "details": ...}` as one line: its message,
/// the validation messages in `details`, and the status code.
fn error_sentence(status: StatusCode, body: &Value, method: &Method, path: &str) -> String {
    let mut message = match body.get("error").and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None => match body {
            Value::String(s) if !s.is_empty() && s.len() < 300 => s.clone(),
            _ => status
                .canonical_reason()
                .unwrap_or("request failed")
                .to_string(),
        },
    };
    if let Some(details) = body.get("details").and_then(Value::as_array) {
        let parts: Vec<&str> = details
            .iter()
            .filter_map(|d| d.get("message").and_then(Value::as_str))
            .collect();
        if !parts.is_empty() {
            message = format!("{message}: {}", parts.join("; "));
        }
    }
    match status {
        StatusCode::UNAUTHORIZED => format!(
            "{message} ({}): pass an agent key with --api-key or PAPERCLIP_API_KEY, \
             or reach the server on loopback as the local board",
            status.as_u16()
        ),
        StatusCode::NOT_FOUND if message.starts_with("No route for") => format!(
            "{method} {path}: the server does not know this route ({}); is it an older paperclip?",
            status.as_u16()
        ),
        _ => format!("{message} ({})", status.as_u16()),
    }
}

/// Prefixes a failure with what the person typed; "Issue not found (404)"
/// about `ACM-99` becomes "ACM-99: no such task (404)".
pub fn about(err: anyhow::Error, subject: &str) -> anyhow::Error {
    let text = err.to_string();
    if let Some(rest) = text.strip_suffix(" (404)") {
        let what = rest.trim_end_matches(" not found").to_lowercase();
        let what = match what.as_str() {
            "issue" => "task".to_string(),
            "heartbeat run" => "run".to_string(),
            w => w.to_string(),
        };
        return fail(format!("{subject}: no such {what} (404)"));
    }
    if err.downcast_ref::<Failure>().is_some() && !text.starts_with("cannot reach") {
        return fail(format!("{subject}: {text}"));
    }
    err
}
