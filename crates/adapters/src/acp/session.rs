//! One ACP run's conversation with the agent: the handshake, a session
//! created or loaded (and, where loading is not possible, a fresh one told
//! how the last run ended), the model, the prompt turn with its updates and
//! permission requests, and a cooperative cancel (`session/cancel`, then the
//! process is stopped after `graceSec`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use super::memory;
use super::rpc::{self, CallError, Connection, Incoming, RpcError};
use super::settings::Settings;
use super::updates::{self, Mapper};
use crate::cli::stream::{Item, Usage};
use crate::config::truncate;
use crate::{CancellationToken, ErrorCode, RunSink, Stream};

/// The protocol version we speak (ACP v1).
const PROTOCOL_VERSION: u64 = 1;

/// How long the agent may take to exit on its own once its stdin closes
/// after its turn, before it is stopped (most bridges wait for more input).
const EXIT_AFTER_TURN: Duration = Duration::from_secs(1);

/// What the driver needs for one run.
pub(crate) struct Plan {
    pub cwd: PathBuf,
    pub prompt: String,
    /// Instructions for a fresh session (the agent's file, the Paperclip
    /// skill); a loaded session has them already.
    pub preamble: Option<String>,
    pub session_id: Option<String>,
    /// Chosen through the session (`session/set_config_option` or
    /// `session/set_model`); `None` when unset or set another way.
    pub model: Option<String>,
    /// The configured model, however it is applied (for the transcript).
    pub configured_model: Option<String>,
    pub settings: Settings,
    pub state_dir: PathBuf,
    pub grace: Duration,
    /// The config asks the agent to act without its own sandbox or
    /// approvals (Codex's `dangerouslyBypassApprovalsAndSandbox`, Claude's
    /// `dangerouslySkipPermissions`): the session's most permissive mode.
    pub full_access: bool,
}

/// How the conversation went.
#[derive(Default)]
pub(crate) struct Report {
    pub session_id: Option<String>,
    pub stop_reason: Option<String>,
    /// The turn was answered (with any stop reason).
    pub answered: bool,
    pub error: Option<(Option<ErrorCode>, String)>,
    /// Stopped by the run's cancel (Stop, pause, budget, shutdown).
    pub cancelled: bool,
    pub text: Option<String>,
    pub usage: Usage,
    pub model: Option<String>,
    /// Tokens in context and the window size, where the agent says.
    pub context: Option<(u64, u64)>,
}

enum Ended {
    Answer(Value),
    Failed(RpcError),
    Closed,
    Cancelled,
}

pub(crate) struct Driver {
    conn: Connection,
    sink: Arc<dyn RunSink>,
    mapper: Mapper,
    /// Updates are the turn's (not a loaded session's replayed history).
    live: bool,
    session: Option<String>,
    /// A permission request refused under `nonInteractivePermissions: fail`.
    refused: Option<String>,
    plan: Plan,
}

impl Driver {
    pub fn new(conn: Connection, sink: Arc<dyn RunSink>, plan: Plan) -> Driver {
        Driver {
            conn,
            sink,
            mapper: Mapper::default(),
            live: false,
            session: None,
            refused: None,
            plan,
        }
    }

    fn log(&self, line: &str) {
        self.sink
            .log(Stream::System, &format!("[paperclip] {line}\n"));
    }

    /// The whole conversation; stops the process (through `kill`) when done.
    pub async fn drive(
        mut self,
        cancel: &CancellationToken,
        stop_now: &CancellationToken,
        kill: &CancellationToken,
    ) -> Report {
        let mut report = self.converse(cancel, stop_now).await;
        report.session_id = self.session.clone();
        if let (Some(id), true) = (&report.session_id, report.answered) {
            if let Err(e) = memory::remember(&self.plan.state_dir, id, &report) {
                self.log(&e);
            }
        }
        // Its stdin closed, an agent may exit by itself; whatever is left
        // is stopped so the run ends (its session is on disk by now).
        self.conn.close();
        if !report.cancelled {
            let _ = tokio::time::timeout(EXIT_AFTER_TURN, async {
                while self.conn.next().await.is_some() {}
            })
            .await;
        }
        kill.cancel();
        report
    }

    async fn converse(
        &mut self,
        cancel: &CancellationToken,
        stop_now: &CancellationToken,
    ) -> Report {
        let mut report = Report::default();
        let init = json!({
            "protocolVersion": PROTOCOL_VERSION,
            // The agent uses its own tools for files and commands.
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "paperclip", "version": env!("CARGO_PKG_VERSION")},
        });
        let init = match self.call("initialize", init, cancel).await {
            Ok(v) => v,
            Err(e) => return self.failed(report, "the ACP handshake (initialize)", e),
        };
        let agent = init
            .pointer("/agentInfo/title")
            .or_else(|| init.pointer("/agentInfo/name"));
        let version = init
            .pointer("/agentInfo/version")
            .and_then(Value::as_str)
            .unwrap_or("");
        self.log(&format!(
            "ACP agent {} {version} (protocol {})",
            agent.and_then(Value::as_str).unwrap_or("(unnamed)"),
            init.get("protocolVersion").unwrap_or(&Value::Null)
        ));
        let can_load = init.pointer("/agentCapabilities/loadSession") == Some(&Value::Bool(true));

        let mut fresh_note = None;
        let mut session_result = Value::Null;
        if let Some(saved) = self
            .plan
            .session_id
            .clone()
            .filter(|_| !self.plan.settings.oneshot)
        {
            let why = if can_load {
                let params = json!({"sessionId": saved, "cwd": self.plan.cwd, "mcpServers": []});
                match self.call("session/load", params, cancel).await {
                    Ok(v) => {
                        self.session = Some(saved.clone());
                        session_result = v;
                        self.log(&format!("loaded session {saved} (session/load)"));
                        None
                    }
                    Err(CallError::Rpc(e)) => Some(format!("session/load failed: {}", e.text())),
                    Err(e) => return self.failed(report, "loading the session", e),
                }
            } else {
                Some("the agent does not offer session/load".to_string())
            };
            if let Some(why) = why {
                let message = format!(
                    "could not resume session {saved} ({why}); starting a fresh session told how the last run ended"
                );
                self.log(&message);
                self.sink.event(
                    "session.reset",
                    "warn",
                    &message,
                    json!({"sessionId": saved, "reason": why}),
                );
                fresh_note = Some(memory::summary_of(&self.plan.state_dir, &saved));
            }
        }
        if self.session.is_none() {
            let params = json!({"cwd": self.plan.cwd, "mcpServers": []});
            match self.call("session/new", params, cancel).await {
                Ok(v) => {
                    let id = v
                        .get("sessionId")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let Some(id) = id else {
                        report.error = Some((
                            Some(ErrorCode::OutputParseError),
                            "session/new answered without a sessionId".into(),
                        ));
                        return report;
                    };
                    self.session = Some(id);
                    session_result = v;
                }
                Err(e) => return self.failed(report, "creating a session (session/new)", e),
            }
        }
        let session = self.session.clone().unwrap_or_default();
        self.choose_model(&session, &session_result, cancel).await;
        if self.plan.full_access {
            self.choose_mode(&session, &session_result, cancel).await;
        }
        report.model = self
            .plan
            .configured_model
            .clone()
            .or_else(|| current_model(&session_result));
        Item::Init {
            session_id: Some(session.clone()),
            model: report.model.clone(),
            tools: Vec::new(),
        }
        .emit(&*self.sink);

        let resumed =
            fresh_note.is_none() && self.plan.session_id.as_deref() == Some(session.as_str());
        let mut text = String::new();
        if !resumed {
            if let Some(p) = &self.plan.preamble {
                text.push_str(p);
                text.push_str("\n\n---\n\n");
            }
        }
        if let Some(note) = fresh_note {
            text.push_str(&note);
            text.push_str("\n\n");
        }
        text.push_str(&self.plan.prompt);
        self.live = true;
        self.mapper.cost_baseline();
        let ended = self.prompt(&session, text, cancel, stop_now).await;
        let answer = match &ended {
            Ended::Answer(v) => Some(v),
            _ => None,
        };
        let (items, extras) = self.mapper.finish(answer);
        self.emit(items, extras);
        report.usage = self.mapper.usage.clone();
        // The model the agent says answered beats the configured one
        // (`auto` names none).
        if let Some(m) = self.mapper.reported_model.clone() {
            report.model = Some(m);
        }
        report.text = self.mapper.last_message.clone();
        report.context = self.mapper.context;
        if report.usage.is_empty() {
            let context = match report.context {
                Some((used, size)) => format!(" (only its context: {used} of {size} tokens)"),
                None => String::new(),
            };
            self.log(&format!(
                "the agent reported no token usage over ACP{context}; none is recorded for this run"
            ));
        }
        if let Some(why) = self.refused.take() {
            report.error = Some((Some(ErrorCode::PermissionDenied), why));
            report.answered = matches!(ended, Ended::Answer(_) | Ended::Cancelled);
            return report;
        }
        match ended {
            Ended::Answer(v) => {
                report.answered = true;
                report.stop_reason = v
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            Ended::Failed(e) => report.error = Some((None, e.text())),
            Ended::Closed => {}
            Ended::Cancelled => report.cancelled = true,
        }
        report
    }

    fn failed(&self, mut report: Report, step: &str, e: CallError) -> Report {
        match e {
            CallError::Rpc(e) => {
                report.error = Some((None, format!("{step} failed: {}", e.text())))
            }
            CallError::Closed => {}
            CallError::Cancelled => report.cancelled = true,
        }
        report
    }

    /// The model through the session, where the agent offers a way.
    async fn choose_model(&mut self, session: &str, result: &Value, cancel: &CancellationToken) {
        let Some(model) = self.plan.model.clone() else {
            return;
        };
        let offers_option = result
            .get("configOptions")
            .and_then(Value::as_array)
            .is_some_and(|o| o.iter().any(|o| o["id"] == "model"));
        let (method, params) = if offers_option {
            (
                "session/set_config_option",
                json!({"sessionId": session, "configId": "model", "value": model}),
            )
        } else if result.get("models").is_some() {
            (
                "session/set_model",
                json!({"sessionId": session, "modelId": model}),
            )
        } else {
            self.log(&format!(
                "the agent offers no way to choose a model; {model} is not applied"
            ));
            return;
        };
        match self.call(method, params, cancel).await {
            Ok(_) => self.log(&format!("model {model} ({method})")),
            Err(CallError::Rpc(e)) => self.log(&format!(
                "the agent refused model {model} ({method}: {}); running its default",
                e.text()
            )),
            Err(_) => {}
        }
    }

    /// The agent's own "no sandbox, no approvals" mode, where it offers one
    /// (codex-acp's `full-access`; claude-code-acp offers `bypassPermissions`
    /// only when not run as root).
    async fn choose_mode(&mut self, session: &str, result: &Value, cancel: &CancellationToken) {
        let modes = result
            .pointer("/modes/availableModes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(mode) = ["full-access", "bypassPermissions"]
            .into_iter()
            .find(|m| modes.iter().any(|o| o["id"] == *m))
        else {
            self.log("the agent offers no unsandboxed mode; its permission requests are answered by permissionMode");
            return;
        };
        let params = json!({"sessionId": session, "modeId": mode});
        match self.call("session/set_mode", params, cancel).await {
            Ok(_) => self.log(&format!("session mode {mode} (session/set_mode)")),
            Err(CallError::Rpc(e)) => {
                self.log(&format!("the agent refused mode {mode}: {}", e.text()))
            }
            Err(_) => {}
        }
    }

    /// A request answered before anything else of ours is sent.
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let id = self.conn.start(method, params);
        loop {
            tokio::select! {
                m = self.conn.next() => match m {
                    None => return Err(CallError::Closed),
                    Some(Incoming::Response { id: r, result }) if r == id => return result.map_err(CallError::Rpc),
                    Some(other) => self.handle(other),
                },
                _ = cancel.cancelled() => return Err(CallError::Cancelled),
            }
        }
    }

    /// The turn. A cancel asks the agent to stop (`session/cancel`) and
    /// waits `graceSec` for its answer; a stop without grace does not wait.
    async fn prompt(
        &mut self,
        session: &str,
        text: String,
        cancel: &CancellationToken,
        stop_now: &CancellationToken,
    ) -> Ended {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let id = self.conn.start("session/prompt", params);
        let mut asked_to_stop = false;
        let mut deadline: Option<Instant> = None;
        loop {
            // A refusal that fails the run ends the turn like a Stop.
            if self.refused.is_some() && !asked_to_stop {
                asked_to_stop = true;
                self.conn.send(rpc::notification(
                    "session/cancel",
                    json!({"sessionId": session}),
                ));
                deadline.get_or_insert(Instant::now() + self.plan.grace);
            }
            tokio::select! {
                m = self.conn.next() => match m {
                    None => return if deadline.is_some() { Ended::Cancelled } else { Ended::Closed },
                    Some(Incoming::Response { id: r, result }) if r == id => {
                        if deadline.is_some() {
                            return Ended::Cancelled;
                        }
                        return match result {
                            Ok(v) => Ended::Answer(v),
                            Err(e) => Ended::Failed(e),
                        };
                    }
                    Some(other) => self.handle(other),
                },
                _ = cancel.cancelled(), if deadline.is_none() => {
                    if stop_now.is_cancelled() {
                        return Ended::Cancelled;
                    }
                    self.conn.send(rpc::notification("session/cancel", json!({"sessionId": session})));
                    self.log(&format!(
                        "asked the agent to end its turn (session/cancel); it is stopped in {}s if it has not",
                        self.plan.grace.as_secs_f64()
                    ));
                    deadline = Some(Instant::now() + self.plan.grace);
                }
                _ = sleep_until(deadline), if deadline.is_some() => return Ended::Cancelled,
                _ = stop_now.cancelled(), if deadline.is_some() => return Ended::Cancelled,
            }
        }
    }

    fn handle(&mut self, message: Incoming) {
        match message {
            Incoming::Notification { method, params } if method == "session/update" => {
                let update = params.get("update").cloned().unwrap_or(Value::Null);
                // A loaded session replays its history first: not this run's.
                if self.live || update["sessionUpdate"] == "usage_update" {
                    let (items, extras) = self.mapper.update(&update);
                    if self.live {
                        self.emit(items, extras);
                    }
                }
            }
            Incoming::Request { id, method, params } if method == "session/request_permission" => {
                self.permission(&id, &params)
            }
            Incoming::Request { id, method, .. } => {
                self.conn.send(rpc::error(
                    &id,
                    rpc::METHOD_NOT_FOUND,
                    &format!("{method} is not offered by this client"),
                ));
            }
            _ => {}
        }
    }

    fn permission(&mut self, id: &Value, params: &Value) {
        let call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let call_id = call.get("toolCallId").and_then(Value::as_str).unwrap_or("");
        let kind = call
            .get("kind")
            .and_then(Value::as_str)
            .or_else(|| self.mapper.tool_kind(call_id))
            .map(str::to_string);
        let options = params
            .get("options")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let s = &self.plan.settings;
        let decision = updates::decide(s.permission, s.non_interactive, kind.as_deref(), &options);
        self.conn.send(rpc::result(id, updates::answer(&decision)));
        let what = call
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| call.get("rawInput").map(Value::to_string))
            .unwrap_or_else(|| "a tool call".into());
        let what = truncate(what.trim(), 200).to_string();
        let mode = match s.permission {
            updates::PermissionMode::ApproveAll => "approve-all",
            updates::PermissionMode::ApproveReads => "approve-reads",
            updates::PermissionMode::DenyAll => "deny-all",
        };
        let verb = if decision.allowed {
            "approved"
        } else {
            "refused"
        };
        self.sink.event(
            "acp.permission",
            if decision.allowed { "info" } else { "warn" },
            &format!("{verb} {what} (permissionMode {mode})"),
            json!({"toolCallId": call_id, "kind": kind, "allowed": decision.allowed,
                   "option": decision.option, "permissionMode": mode}),
        );
        if decision.fail && self.refused.is_none() {
            self.refused = Some(format!(
                "the agent asked permission for {what}, which permissionMode {mode} does not grant \
                 (nonInteractivePermissions: fail); its turn was cancelled"
            ));
        }
    }

    fn emit(&self, items: Vec<Item>, extras: Vec<updates::Extra>) {
        for item in items {
            item.emit(&*self.sink);
        }
        for extra in extras {
            extra.emit(&*self.sink);
        }
    }
}

fn current_model(session: &Value) -> Option<String> {
    session
        .pointer("/models/currentModelId")
        .and_then(Value::as_str)
        .map(str::to_string)
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
