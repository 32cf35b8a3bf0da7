//! A scripted model provider for end-to-end tests of the coding-agent
//! adapters. The real `claude`, `codex` and `opencode` CLIs are pointed at it
//! on loopback; it answers each model request with the next [`Turn`] of a
//! per-test script and records every request, so a test can assert what the
//! CLI sent (the conversation on resume, nothing after a cancel).
//!
//! One server speaks all three wire formats, each in its own module:
//! [`anthropic`] (`POST /v1/messages`, Claude Code), [`responses`]
//! (`POST /v1/responses`, Codex) and [`chat`] (`POST /v1/chat/completions`,
//! OpenCode's OpenAI-compatible provider).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{StatusCode, Uri};
use axum::Router;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod anthropic;
pub mod chat;
pub mod gemini;
pub mod local;
pub mod responses;
mod sse;

/// One model turn, as the test wants the model to behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Turn {
    /// A final assistant message; the CLI's turn ends.
    Answer { text: String },
    /// A call of the CLI's shell tool running `command`; the CLI runs it and
    /// sends the result in its next request.
    Bash { command: String },
    /// A call of any tool the CLI offers, by its name as the CLI sends it
    /// (e.g. `mcp__paperclip__create_task` for an MCP server's tool), with
    /// this JSON input; the CLI runs it and sends the result next.
    Tool { name: String, input: Value },
    /// The provider refuses the request with this HTTP status and message,
    /// in the wire format's error shape (e.g. 404 for an unknown model).
    Error { status: u16, message: String },
    /// The response starts streaming and never finishes: for cancel tests.
    Hang,
}

/// Tokens every scripted turn reports instead of the provider's estimate,
/// so a test can make each turn cost a known amount (side requests keep the
/// estimate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnUsage {
    /// Input tokens of the request, cached ones included (as OpenAI counts).
    pub input_tokens: u64,
    /// Of those, read from the prompt cache (Anthropic reports them apart:
    /// `input_tokens` there is the uncached rest).
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
}

/// A provider usage window the scripted responses report in their headers:
/// how used it is (0.0-1.0) and when it resets (epoch seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateWindow {
    pub utilization: f64,
    pub resets_at: i64,
}

/// The usage windows every response reports from now on, as Anthropic's
/// `anthropic-ratelimit-unified-*` headers (Claude Code turns them into its
/// `rate_limit_event` when it runs on a subscription token) and as Codex's
/// `x-codex-primary-*` / `x-codex-secondary-*` headers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateLimits {
    pub five_hour: Option<RateWindow>,
    pub seven_day: Option<RateWindow>,
}

impl RateLimits {
    /// The headers of a response, Anthropic's and Codex's.
    pub(crate) fn headers(&self) -> Vec<(String, String)> {
        let mut h = Vec::new();
        let windows = [
            ("5h", 300, "primary", self.five_hour),
            ("7d", 10080, "secondary", self.seven_day),
        ];
        for (short, minutes, slot, w) in windows {
            let Some(w) = w else { continue };
            let status = if w.utilization >= 1.0 {
                "rejected"
            } else {
                "allowed"
            };
            h.push((
                format!("anthropic-ratelimit-unified-{short}-utilization"),
                w.utilization.to_string(),
            ));
            h.push((
                format!("anthropic-ratelimit-unified-{short}-reset"),
                w.resets_at.to_string(),
            ));
            h.push((
                format!("anthropic-ratelimit-unified-{short}-status"),
                status.into(),
            ));
            h.push((
                format!("x-codex-{slot}-used-percent"),
                (w.utilization * 100.0).to_string(),
            ));
            h.push((
                format!("x-codex-{slot}-window-minutes"),
                minutes.to_string(),
            ));
            h.push((format!("x-codex-{slot}-reset-at"), w.resets_at.to_string()));
        }
        if let Some(w) = self.five_hour.or(self.seven_day) {
            let claim = if self.five_hour.is_some() {
                "five_hour"
            } else {
                "seven_day"
            };
            h.push((
                "anthropic-ratelimit-unified-status".into(),
                "allowed".into(),
            ));
            h.push((
                "anthropic-ratelimit-unified-reset".into(),
                w.resets_at.to_string(),
            ));
            h.push((
                "anthropic-ratelimit-unified-representative-claim".into(),
                claim.into(),
            ));
        }
        h
    }
}

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Api {
    AnthropicMessages,
    OpenAiResponses,
    ChatCompletions,
    Gemini,
    Other,
}

/// A request the provider received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub api: Api,
    pub path: String,
    /// The JSON body (`Value::Null` when it was not JSON).
    pub body: Value,
    pub at: Instant,
    /// The script turn this request consumed; `None` for side requests the
    /// CLI makes on its own (titles, token counts) that the script ignores.
    pub turn: Option<Turn>,
}

#[derive(Default)]
pub(crate) struct State {
    turns: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<Recorded>>,
    usage: Mutex<Option<TurnUsage>>,
    rate_limits: Mutex<Option<RateLimits>>,
    local: local::Models,
}

impl State {
    /// The next scripted turn; an exhausted script answers with a plain
    /// message so a CLI never hangs on a test's miscount.
    pub(crate) fn next_turn(&self) -> Turn {
        self.turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Turn::Answer {
                text: "(the test script has no more turns)".into(),
            })
    }

    /// The usage a response reports: the scripted one for a turn when the
    /// test set it, else the format's own estimate.
    pub(crate) fn usage(&self, is_turn: bool, estimate: TurnUsage) -> TurnUsage {
        match *self.usage.lock().unwrap() {
            Some(scripted) if is_turn => scripted,
            _ => estimate,
        }
    }

    /// The rate-limit headers every response carries now (none unset).
    pub(crate) fn rate_limit_headers(&self) -> Vec<(String, String)> {
        self.rate_limits
            .lock()
            .unwrap()
            .map(|r| r.headers())
            .unwrap_or_default()
    }

    pub(crate) fn record(&self, api: Api, path: &str, body: Value, turn: Option<Turn>) {
        self.requests.lock().unwrap().push(Recorded {
            api,
            path: path.to_string(),
            body,
            at: Instant::now(),
            turn,
        });
    }
}

/// A running provider; it stops when dropped.
pub struct ScriptedProvider {
    addr: SocketAddr,
    state: Arc<State>,
    server: tokio::task::JoinHandle<()>,
}

impl ScriptedProvider {
    /// Starts a provider on an ephemeral loopback port with `turns` queued.
    pub async fn start(turns: impl IntoIterator<Item = Turn>) -> ScriptedProvider {
        let state = Arc::new(State::default());
        state.turns.lock().unwrap().extend(turns);
        let app = Router::new()
            .merge(anthropic::routes())
            .merge(responses::routes())
            .merge(chat::routes())
            .merge(gemini::routes())
            .merge(local::routes())
            .fallback(unknown)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ScriptedProvider {
            addr,
            state,
            server,
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash or `/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues more turns, e.g. for the next wake of the same agent.
    pub fn push(&self, turns: impl IntoIterator<Item = Turn>) {
        self.state.turns.lock().unwrap().extend(turns);
    }

    /// Every scripted turn from now on reports `usage` (all wire formats).
    pub fn report_usage(&self, usage: TurnUsage) {
        *self.state.usage.lock().unwrap() = Some(usage);
    }

    /// Every response from now on reports these usage windows in its
    /// headers (`None`: no rate-limit headers, the default).
    pub fn report_rate_limits(&self, limits: Option<RateLimits>) {
        *self.state.rate_limits.lock().unwrap() = limits;
    }

    /// Turns not yet consumed.
    pub fn remaining(&self) -> usize {
        self.state.turns.lock().unwrap().len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The requests that consumed a script turn (the conversation proper).
    pub fn turn_requests(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.turn.is_some())
            .collect()
    }

    /// Waits until at least `n` script turns were consumed.
    pub async fn wait_for_turns(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.turn_requests().len() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

impl Drop for ScriptedProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn unknown(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    uri: Uri,
    body: Bytes,
) -> (StatusCode, String) {
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.record(Api::Other, uri.path(), json, None);
    (
        StatusCode::NOT_FOUND,
        format!("no route for {}", uri.path()),
    )
}
