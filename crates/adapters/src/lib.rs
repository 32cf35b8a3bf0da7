//! Agent adapters. An adapter knows how to run one heartbeat of one kind of
//! agent (a local process, an HTTP endpoint, Claude Code, Codex, OpenCode)
//! and reports what happened through a [`RunSink`]. Adapters are mechanism
//! only: the runtime owns the run row, redaction, excerpts and events.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
pub use tokio_util::sync::CancellationToken;

pub mod acp;
mod child_env;
pub mod cli;
pub mod config;
pub mod confine;
pub mod detect;
pub mod environment;
pub mod http;
pub mod k8s;
pub mod local_models;
pub mod models;
mod output;
pub mod process;
mod process_check;
mod status_line;
pub mod tree;

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
    /// The agent's name, for what people read (a Job's annotation).
    pub agent_name: String,
    pub company_id: String,
    /// The agent's `adapterConfig`, already validated by [`Adapter::validate_config`].
    pub config: Value,
    /// `PAPERCLIP_*` variables (and the agent's own env overlay), applied on top of
    /// an allow-listed part of the server's environment for process adapters
    /// (never all of it); available to templates for HTTP.
    pub env: BTreeMap<String, String>,
    /// The rendered prompt, when the agent has a prompt template.
    pub prompt: Option<String>,
    /// JSON payload describing the wake (context snapshot), for HTTP bodies.
    pub context: Value,
    /// Working directory when the config does not name one.
    pub default_cwd: PathBuf,
    /// Cancelled when the run must stop (cancel, pause, budget stop, shutdown).
    pub cancel: CancellationToken,
    /// Cancelled before `cancel` when the stop must not wait `graceSec` for
    /// the process to finish on its own: a budget reached, where every second
    /// of grace is more spend (a CLI may keep working after TERM).
    pub stop_now: CancellationToken,
    /// The CLI session saved for this agent and task, to resume.
    pub session_id: Option<String>,
    /// Directory holding one folder per skill (`paperclip/SKILL.md`), for
    /// adapters whose CLI loads skills or instructions from files.
    pub skills_dir: Option<PathBuf>,
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
    /// The CLI refused to resume the saved session (unknown or expired).
    ResumeSessionInvalid,
    /// The provider rejected the model (unknown, retired, not allowed).
    ModelUnavailable,
    /// No credentials: API key missing or invalid, CLI not logged in.
    AuthRequired,
    /// Rate limit or plan usage limit reached.
    RateLimited,
    /// The conversation no longer fits the model's context window.
    ContextWindowExceeded,
    /// The model cannot call tools (a small local model): no agent can work
    /// a task on it.
    ModelToolUseUnsupported,
    /// The Kubernetes API could not be read to check for a running Job of
    /// this agent; no Job is started on a guess (fail closed).
    K8sConcurrencyGuardUnreachable,
    /// A Job of this agent is still running.
    K8sConcurrentRunBlocked,
    K8sPromptSecretCreateFailed,
    K8sJobCreateFailed,
    /// The Job's pod never ran: unschedulable, image pull, init failure.
    K8sPodScheduleFailed,
    /// The log stream ended but the Job did not reach a terminal state in
    /// time; the Job is kept so nothing starts beside it.
    K8sJobStateMismatch,
    /// No usable Kubernetes client (no kubeconfig, the pod not found).
    K8sUnavailable,
    /// The Job's container was killed at its memory limit (`OOMKilled`).
    K8sOomKilled,
    /// The Job vanished (404) before its end while Paperclip had not
    /// cancelled it: someone or something else deleted it.
    K8sJobDeletedExternally,
    /// An ACP agent asked for a permission its policy refuses, with
    /// `nonInteractivePermissions: fail`.
    PermissionDenied,
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
            ErrorCode::ResumeSessionInvalid => "resume_session_invalid",
            ErrorCode::ModelUnavailable => "model_unavailable",
            ErrorCode::AuthRequired => "auth_required",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::ContextWindowExceeded => "context_window_exceeded",
            ErrorCode::ModelToolUseUnsupported => "model_tool_use_unsupported",
            ErrorCode::K8sConcurrencyGuardUnreachable => "k8s_concurrency_guard_unreachable",
            ErrorCode::K8sConcurrentRunBlocked => "k8s_concurrent_run_blocked",
            ErrorCode::K8sPromptSecretCreateFailed => "k8s_prompt_secret_create_failed",
            ErrorCode::K8sJobCreateFailed => "k8s_job_create_failed",
            ErrorCode::K8sPodScheduleFailed => "k8s_pod_schedule_failed",
            ErrorCode::K8sJobStateMismatch => "k8s_job_state_mismatch",
            ErrorCode::K8sUnavailable => "k8s_unavailable",
            ErrorCode::K8sOomKilled => "k8s_oom_killed",
            ErrorCode::K8sJobDeletedExternally => "k8s_job_deleted_externally",
            ErrorCode::PermissionDenied => "permission_denied",
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
    /// The CLI session this run ended in, to resume on the next run of the task.
    pub session_id: Option<String>,
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
            session_id: None,
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
    /// The run's usage so far, each time the agent's output carries more:
    /// what lets the runtime stop a run at a budget before it ends.
    fn usage(&self, _usage: &UsageSoFar) {}
    /// A short status line for people watching (seed 004's status hook).
    fn status(&self, _update: &paperclip_core::run_status::StatusUpdate) {}
}

/// A run's cumulative usage while it runs (not a delta).
#[derive(Debug, Clone, PartialEq)]
pub struct UsageSoFar {
    /// Who bills it (`anthropic`, `openai`, ...).
    pub provider: String,
    pub model: Option<String>,
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// `None` when neither the CLI nor a price table prices the model: the
    /// tokens still count, the money is unknown.
    pub cost_usd: Option<f64>,
    /// Who pays: a subscription's included tokens cost no budget.
    pub billing_type: paperclip_core::billing::BillingType,
    /// The CLI reported its run's end with these totals: it is exiting on
    /// its own, and stopping it now would only mislabel a finished run.
    pub finished: bool,
}

impl UsageSoFar {
    /// Whole cents as a cost event records them (none past a subscription).
    pub fn cost_cents(&self) -> Option<u64> {
        self.billing_type
            .billed_cents(self.cost_usd.map(usd_to_cents))
    }
}

/// Dollars to whole cents, rounded; the one conversion used for the cost
/// event and for the budget check, so both agree on when a limit is reached.
pub fn usd_to_cents(usd: f64) -> u64 {
    (usd * 100.0).round().max(0.0) as u64
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
    /// Whether the agent keeps a resumable session per task.
    pub sessions: bool,
    /// Whether the agent needs a prompt; one is built from a default template
    /// when its config has none.
    pub needs_prompt: bool,
}

/// How long one invocation may take, as the adapter itself parses its config
/// (the runtime derives the run token's lifetime from it, never from the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunLimits {
    /// `None`: the adapter sets no bound of its own (the run may take hours).
    pub timeout: Option<Duration>,
    /// Between TERM and KILL once the timeout passes.
    pub grace: Duration,
    /// An asynchronous run (accepted now, completed by a callback later) may
    /// wait this long for its callback before it is timed out.
    pub callback: Option<Duration>,
}

pub trait Adapter: Send + Sync {
    fn kind(&self) -> &'static str;
    fn capabilities(&self) -> Capabilities;
    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>>;
    /// The top-level config keys this adapter type knows: those it reads and
    /// upstream's for the same type that it accepts unused. A config being
    /// saved may set no other (the server refuses it naming the key); a
    /// stored one is not checked again, so older configs keep running.
    fn known_keys(&self) -> config::KnownKeys;
    /// The limits of a valid config; an invalid one has none (it never runs).
    fn limits(&self, _config: &Value) -> RunLimits {
        RunLimits::default()
    }
    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome>;
    /// Checks that runs can start: the CLI is installed, its version, the
    /// working directory. Called by the environment-test route.
    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        default_cwd: &'a std::path::Path,
    ) -> BoxFuture<'a, environment::Report> {
        Box::pin(async move {
            environment::basic(self.kind(), self.validate_config(config), default_cwd)
        })
    }
    /// The models a hire form can offer for this type (`GET
    /// .../adapters/{type}/models`), from the CLI or a known list; empty
    /// when the adapter has no model to choose.
    fn models<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, Vec<models::Model>> {
        Box::pin(async { Vec::new() })
    }
    /// The models known without asking anyone (upstream's static `models`,
    /// counted in the adapter listing); [`Adapter::models`] falls back to it.
    fn known_models(&self) -> Vec<models::Model> {
        Vec::new()
    }
    /// The model a run with no `model` set would use, as the CLI's own
    /// settings (in the agent's `HOME`) or environment say.
    fn detect_model<'a>(
        &'a self,
        _config: &'a Value,
    ) -> BoxFuture<'a, Option<models::DetectedModel>> {
        Box::pin(async { None })
    }
    /// Upstream's `{fields: [...]}` for the keys this type reads, the model
    /// field offering `models`.
    fn config_schema(&self, models: &[models::Model]) -> Value {
        models::schema(&self.known_keys(), &[], models)
    }
}

/// The adapters this build knows, by `adapterType`.
pub fn registry() -> BTreeMap<&'static str, Arc<dyn Adapter>> {
    let mut map: BTreeMap<&'static str, Arc<dyn Adapter>> = BTreeMap::new();
    map.insert("process", Arc::new(process::ProcessAdapter));
    map.insert("http", Arc::new(http::HttpAdapter::default()));
    map.insert(
        "claude_local",
        Arc::new(cli::CliAdapter::new(cli::claude::Claude)),
    );
    map.insert(
        "codex_local",
        Arc::new(cli::CliAdapter::new(cli::codex::Codex)),
    );
    map.insert(
        "opencode_local",
        Arc::new(cli::CliAdapter::new(cli::opencode::OpenCode)),
    );
    map.insert("pi_local", Arc::new(cli::CliAdapter::new(cli::pi::Pi)));
    map.insert("acpx_local", Arc::new(acp::acpx::AcpxAdapter));
    map.insert(
        "gemini_local",
        Arc::new(cli::CliAdapter::new(cli::gemini::Gemini)),
    );
    map.insert(
        "claude_k8s",
        Arc::new(k8s::K8sAdapter::new("claude_k8s", cli::claude::Claude)),
    );
    map.insert(
        "opencode_k8s",
        Arc::new(k8s::K8sAdapter::new(
            "opencode_k8s",
            cli::opencode::OpenCode,
        )),
    );
    map
}
