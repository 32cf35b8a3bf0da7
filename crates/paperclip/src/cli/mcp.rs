//! `paperclip mcp`: Paperclip's MCP server for an assistant that starts its
//! servers as processes (Claude Code's `--mcp-config`, Codex, …). Each line
//! on stdin is a JSON-RPC message, sent as it is to the server's `/api/mcp`
//! with the person's board key (`PAPERCLIP_API_KEY`; none for the local
//! board); each answer is written as one line on stdout. Notifications get
//! no line. The server being down or refusing becomes a JSON-RPC error for
//! that request, never an exit: the assistant shows it and carries on. EOF
//! on stdin ends the bridge with 0.

use std::io::Write;

use serde_json::{json, Value};

use super::context::Context;
use super::{Global, DEFAULT_API_BASE};

/// A JSON-RPC error code for "the server did not answer this request".
const UNREACHABLE: i64 = -32000;

pub async fn run(global: Global) -> anyhow::Result<i32> {
    let base = match global.api_base.clone().filter(|b| !b.is_empty()) {
        Some(b) => b,
        None => Context::load()
            .ok()
            .and_then(|c| c.api_base)
            .unwrap_or_else(|| DEFAULT_API_BASE.to_string()),
    };
    let url = format!("{}/api/mcp", base.trim_end_matches('/'));
    let key = global.api_key.clone().filter(|k| !k.is_empty());
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .connect_timeout(std::time::Duration::from_secs(5))
        .build()?;
    // Stdin is read on a thread of its own (tokio's `io-std` is not built in).
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(answer) = forward(&http, &url, key.as_deref(), line).await {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{answer}")?;
            out.flush()?;
        }
    }
    Ok(0)
}

/// The line to answer `line` with, if any.
async fn forward(
    http: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    line: &str,
) -> Option<String> {
    let message: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, -32700, format!("Parse error: {e}"))),
    };
    // Only a request (a method and an id) is owed an answer.
    let id = match &message {
        Value::Object(m) if m.contains_key("method") => m.get("id").cloned(),
        Value::Array(_) => Some(Value::Null),
        _ => None,
    };
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(line.to_string());
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            let why = match e.is_connect() {
                true => format!("Paperclip is not reachable at {url}: is `paperclip run` running?"),
                false => format!("Paperclip at {url} did not answer: {e}"),
            };
            return id.map(|id| error(id, UNREACHABLE, why));
        }
    };
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    let body: Option<Value> = serde_json::from_str(&text).ok();
    let is_rpc = body
        .as_ref()
        .is_some_and(|b| b.is_array() || b.get("jsonrpc").is_some());
    match (is_rpc, id) {
        (true, _) => body.map(|b| b.to_string()),
        (false, None) => None,
        (false, Some(_)) if status.as_u16() == 202 => None,
        (false, Some(id)) => {
            // A refusal before MCP (no key, an agent's key, MCP off): the
            // API's reason, for the assistant to show the person.
            let reason = body
                .as_ref()
                .and_then(|b| b["error"].as_str())
                .map(str::to_string)
                .unwrap_or_else(|| text.chars().take(300).collect());
            Some(error(
                id,
                UNREACHABLE,
                format!("Paperclip refused ({status}): {reason}"),
            ))
        }
    }
}

fn error(id: Value, code: i64, message: String) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }).to_string()
}
