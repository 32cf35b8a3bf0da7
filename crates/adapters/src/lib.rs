//! Agent adapters. An adapter knows how to run one heartbeat of one kind of
//! agent (a local process, an HTTP endpoint, later Claude Code, Codex, ...)
//! and reports what happened through a [`RunSink`]. Adapters are mechanism
//! only: the runtime owns the run row, redaction, excerpts and events.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

mod config;
pub mod http;
mod output;
pub mod process;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which output stream a log chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
    /// Lines Paperclip itself writes into the run log (spawn, signals, HTTP status).
    System,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::System => "system",
        }
    }
}

/// Everything an adapter needs for one run. Built by the runtime.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub run_id: String,
    pub agent_id: String,
    pub company_id: String,
    /// The agent's `adapterConfig`, already validated by [`Adapter::validate_config`].
    pub config: Value,
    /// `PAPERCLIP_*` variables (and the agent's own env overlay), applied on top of
    /// the server's environment for process adapters; available to templates for HTTP.
    pub env: BTreeMap<String, String>,
    /// The rendered prompt, when the agent has a prompt template.
    pub prompt: Option<String>,
    /// JSON payload describing the wake (context snapshot), for HTTP bodies.
    pub context: Value,
    /// Working directory when the config does not name one.
    pub default_cwd: PathBuf,
    /// Cancelled when the run must stop (cancel, pause, budget stop, shutdown).
    pub cancel: CancellationToken,
}

/// How a run ended, as far as the adapter can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeStatus {
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
    /// The adapter handed the work off (HTTP 202); a callback will finish the run.
    Pending,
}

/// Error classes the UI can act on; stored as `errorCode` on the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    AdapterNotInstalled,
    InvalidWorkingDirectory,
    SpawnFailed,
    Timeout,
    Cancelled,
    NonzeroExit,
    OutputParseError,
    HttpError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::AdapterNotInstalled => "adapter_not_installed",
            ErrorCode::InvalidWorkingDirectory => "invalid_working_directory",
            ErrorCode::SpawnFailed => "spawn_failed",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::NonzeroExit => "nonzero_exit",
            ErrorCode::OutputParseError => "output_parse_error",
            ErrorCode::HttpError => "http_error",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: OutcomeStatus,
    pub exit_code: Option<i32>,
    /// Signal name that ended the process (`SIGTERM`, `SIGKILL`), if any.
    pub signal: Option<String>,
    pub error: Option<String>,
    pub error_code: Option<ErrorCode>,
    pub usage: Option<Value>,
    pub result: Option<Value>,
}

impl Outcome {
    pub fn failed(code: ErrorCode, error: impl Into<String>) -> Outcome {
        Outcome {
            status: OutcomeStatus::Failed,
            exit_code: None,
            signal: None,
            error: Some(error.into()),
            error_code: Some(code),
            usage: None,
            result: None,
        }
    }

    pub fn succeeded() -> Outcome {
        Outcome {
            status: OutcomeStatus::Succeeded,
            error: None,
            error_code: None,
            ..Outcome::failed(ErrorCode::NonzeroExit, "")
        }
    }

    /// An unsuccessful end other than `Failed` (timed out, cancelled, pending).
    pub fn ended(status: OutcomeStatus, code: ErrorCode, error: impl Into<String>) -> Outcome {
        Outcome {
            status,
            ..Outcome::failed(code, error)
        }
    }
}

/// Where an adapter reports progress while it runs. Implemented by the runtime,
/// which redacts secrets, appends to the run log and publishes live events.
pub trait RunSink: Send + Sync {
    fn log(&self, stream: Stream, chunk: &str);
    fn event(&self, event_type: &str, level: &str, message: &str, payload: Value);
    fn process_started(&self, pid: u32, process_group_id: u32);
}

/// One configuration problem: the JSON path inside `adapterConfig` and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub path: Vec<String>,
    pub message: String,
}

#[derive(Debug, Clone, Copy)]
pub struct Capabilities {
    /// Whether runs can be cancelled while in flight.
    pub cancellable: bool,
    /// Whether a run can finish later through the callback route.
    pub async_callback: bool,
}

pub trait Adapter: Send + Sync {
    fn kind(&self) -> &'static str;
    fn capabilities(&self) -> Capabilities;
    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>>;
    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome>;
}

/// The adapters this build knows, by `adapterType`.
pub fn registry() -> BTreeMap<&'static str, Arc<dyn Adapter>> {
    let mut map: BTreeMap<&'static str, Arc<dyn Adapter>> = BTreeMap::new();
    map.insert("process", Arc::new(process::ProcessAdapter));
    map.insert("http", Arc::new(http::HttpAdapter::default()));
    map
}
