//! JSON-RPC 2.0 as ACP frames it on stdio: one JSON object per line, each
//! way. The client side we need is small and strictly sequential (one
//! request of ours in flight at a time), so there is no pending-request
//! table: a call reads messages until its own answer arrives, handing
//! everything else (notifications, the agent's requests) to its caller.

use serde_json::{json, Value};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::cli::stream::Lines;
use crate::process::Tap;

/// JSON-RPC's "method not found", for agent requests we do not serve.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;

/// One message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// The answer to one of our requests.
    Response {
        id: u64,
        result: Result<Value, RpcError>,
    },
    /// The agent asks us something (permission, a file) and waits.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    /// The message with its data, as the agent gave it (its details are
    /// often the only useful part: "Internal error" + the real cause).
    pub fn text(&self) -> String {
        match &self.data {
            None | Some(Value::Null) => self.message.clone(),
            Some(Value::String(s)) => format!("{}: {s}", self.message),
            Some(d) => {
                let detail = ["details", "message", "error"]
                    .iter()
                    .find_map(|k| d.get(*k).and_then(Value::as_str))
                    .map(str::to_string)
                    .unwrap_or_else(|| d.to_string());
                format!("{}: {detail}", self.message)
            }
        }
    }
}

/// Reads one line of the agent's stdout; `None` for anything that is not a
/// JSON-RPC message (agents print banners or logs there now and then).
pub(crate) fn parse(line: &str) -> Option<Incoming> {
    let v: Value = serde_json::from_str(line.trim()).ok()?;
    let obj = v.as_object()?;
    let method = obj.get("method").and_then(Value::as_str);
    let id = obj.get("id").filter(|id| !id.is_null());
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    match (method, id) {
        (Some(m), Some(id)) => Some(Incoming::Request {
            id: id.clone(),
            method: m.to_string(),
            params,
        }),
        (Some(m), None) => Some(Incoming::Notification {
            method: m.to_string(),
            params,
        }),
        (None, Some(id)) => {
            let id = id.as_u64()?;
            let result = match obj.get("error") {
                Some(e) if !e.is_null() => Err(RpcError {
                    code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("error")
                        .to_string(),
                    data: e.get("data").cloned(),
                }),
                _ => Ok(obj.get("result").cloned().unwrap_or(Value::Null)),
            };
            Some(Incoming::Response { id, result })
        }
        (None, None) => None,
    }
}

pub(crate) fn request(id: u64, method: &str, params: Value) -> String {
    line(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

pub(crate) fn notification(method: &str, params: Value) -> String {
    line(json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

pub(crate) fn result(id: &Value, result: Value) -> String {
    line(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

pub(crate) fn error(id: &Value, code: i64, message: &str) -> String {
    line(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// A frame is exactly one line: serde_json escapes every newline inside
/// strings, so the only one is the terminator.
fn line(v: Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// Why a call got no answer.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The agent answered with an error.
    Rpc(RpcError),
    /// The agent's stdout ended (it exited or was stopped) first.
    Closed,
    /// The run was stopped while waiting.
    Cancelled,
}

/// Our end of the connection: lines to the agent's stdin, messages from its
/// stdout (through [`StdoutTap`]).
pub(crate) struct Connection {
    to_agent: Option<UnboundedSender<String>>,
    from_agent: UnboundedReceiver<Incoming>,
    next_id: u64,
}

impl Connection {
    pub fn new(
        to_agent: UnboundedSender<String>,
        from_agent: UnboundedReceiver<Incoming>,
    ) -> Connection {
        Connection {
            to_agent: Some(to_agent),
            from_agent,
            next_id: 0,
        }
    }

    /// Writes a line; a closed stdin shows up as a closed stdout soon after.
    pub fn send(&self, line: String) {
        if let Some(tx) = &self.to_agent {
            let _ = tx.send(line);
        }
    }

    /// Closes the agent's stdin: its cue to exit.
    pub fn close(&mut self) {
        self.to_agent = None;
    }

    /// Sends a request and returns its id; its answer comes through
    /// [`Connection::next`].
    pub fn start(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        self.send(request(self.next_id, method, params));
        self.next_id
    }

    /// The next message from the agent; `None` once its stdout is closed.
    pub async fn next(&mut self) -> Option<Incoming> {
        self.from_agent.recv().await
    }
}

/// Cuts the agent's stdout into lines and hands each JSON-RPC message to the
/// run's driver; dropped (closing the channel) when stdout ends.
pub(crate) struct StdoutTap {
    lines: Lines,
    tx: UnboundedSender<Incoming>,
}

impl StdoutTap {
    pub fn new(tx: UnboundedSender<Incoming>) -> StdoutTap {
        StdoutTap {
            lines: Lines::default(),
            tx,
        }
    }
}

impl Tap for StdoutTap {
    fn text(&mut self, text: &str) {
        for line in self.lines.push(text) {
            if let Some(message) = parse(&line) {
                let _ = self.tx.send(message);
            }
        }
    }

    fn end(&mut self) {
        if let Some(line) = self.lines.finish() {
            if let Some(message) = parse(&line) {
                let _ = self.tx.send(message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_by_method_and_id() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#),
            Some(Incoming::Response {
                id: 3,
                result: Ok(json!({"stopReason": "end_turn"}))
            })
        );
        let Some(Incoming::Response {
            id: 2,
            result: Err(e),
        }) = parse(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"Session not found"}}}"#,
        )
        else {
            panic!("an error response");
        };
        assert_eq!(e.code, -32603);
        assert_eq!(e.text(), "Internal error: Session not found");
        assert_eq!(
            parse(
                r#"{"jsonrpc":"2.0","id":"p-1","method":"session/request_permission","params":{"x":1}}"#
            ),
            Some(Incoming::Request {
                id: json!("p-1"),
                method: "session/request_permission".into(),
                params: json!({"x": 1})
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}"#),
            Some(Incoming::Notification {
                method: "session/update".into(),
                params: json!({"sessionId": "s"})
            })
        );
        // Not ours: a log line, a bare value, an object that is no message.
        assert_eq!(parse("Starting agent..."), None);
        assert_eq!(parse("42"), None);
        assert_eq!(parse(r#"{"level":"info"}"#), None);
    }

    #[test]
    fn frames_are_single_lines_even_with_newlines_inside() {
        let line = request(
            7,
            "session/prompt",
            json!({"prompt": [{"type": "text", "text": "a\nb"}]}),
        );
        assert_eq!(line.matches('\n').count(), 1);
        assert!(line.ends_with('\n'));
        let back: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["id"], 7);
        assert_eq!(back["params"]["prompt"][0]["text"], "a\nb");
        let n: Value =
            serde_json::from_str(&notification("session/cancel", json!({"sessionId": "s"})))
                .unwrap();
        assert!(n.get("id").is_none());
        let e: Value = serde_json::from_str(&error(&json!("x"), METHOD_NOT_FOUND, "no")).unwrap();
        assert_eq!(e["error"]["code"], -32601);
        assert_eq!(e["id"], "x");
    }

    #[test]
    fn the_tap_passes_whole_messages_across_chunk_boundaries() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut tap = StdoutTap::new(tx);
        tap.text(r#"{"jsonrpc":"2.0","id":1,"res"#);
        assert!(rx.try_recv().is_err());
        tap.text("ult\":{}}\nnoise\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}");
        assert!(matches!(
            rx.try_recv(),
            Ok(Incoming::Response { id: 1, .. })
        ));
        assert!(rx.try_recv().is_err());
        tap.end();
        assert!(matches!(rx.try_recv(), Ok(Incoming::Notification { .. })));
    }
}
