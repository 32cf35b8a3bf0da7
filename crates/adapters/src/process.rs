//! `adapterType: "process"`: run a local command once per heartbeat.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::config::{
    describe, truncate, Fields, KnownKeys, CONFINEMENT_KEYS, UPSTREAM_AGNOSTIC_KEYS,
};
use crate::output::spawn_reader;
use crate::tree::{Tree, TreeGuard, TREE_VAR};
use crate::{
    Adapter, BoxFuture, CancellationToken, Capabilities, ConfigError, ErrorCode, Invocation,
    Outcome, OutcomeStatus, RunLimits, RunSink, Stream,
};

/// How long output pipes may stay open after the process exits, e.g. held by a
/// grandchild that left the process group.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

pub struct ProcessAdapter;

/// Parsed `adapterConfig` of a process agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessConfig {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    /// `None` means no timeout (`timeoutSec: 0`).
    pub timeout: Option<Duration>,
    pub grace: Duration,
}

impl ProcessConfig {
    /// Upstream's process keys, all read, and the confinement keys; of the
    /// keys upstream keeps across a change of type, unused here are
    /// `instructionsFilePath` (a script gets the prompt on stdin, not a
    /// file), `bootstrapPromptTemplate` and `paperclipSkillSync`.
    /// (`promptTemplate` is read by the runtime, for every type.)
    pub fn known_keys() -> KnownKeys {
        KnownKeys::new(
            &[
                "command",
                "args",
                "cwd",
                "env",
                "timeoutSec",
                "graceSec",
                "promptTemplate",
            ],
            UPSTREAM_AGNOSTIC_KEYS,
        )
        .with(CONFINEMENT_KEYS, &[])
    }

    pub fn parse(config: &Value) -> Result<ProcessConfig, Vec<ConfigError>> {
        let mut f = Fields::new(config)?;
        let command = f.required_string("command").unwrap_or_default();
        let args = f.string_list("args");
        let cwd = f.string("cwd").filter(|s| !s.is_empty()).map(PathBuf::from);
        let env = f.string_map("env");
        for key in env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                f.error(
                    &["env", key],
                    "variable names must be non-empty without '=' or NUL",
                );
            }
        }
        crate::confine::parse(&mut f);
        let timeout = f.non_negative("timeoutSec", 600.0);
        let grace = f.non_negative("graceSec", 10.0);
        f.finish(ProcessConfig {
            command,
            args,
            cwd,
            env,
            timeout: (timeout > 0.0).then(|| Duration::from_secs_f64(timeout)),
            grace: Duration::from_secs_f64(grace),
        })
    }
}

impl Adapter for ProcessAdapter {
    fn kind(&self) -> &'static str {
        "process"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cancellable: true,
            async_callback: false,
            sessions: false,
            // A script reads the task from stdin like a CLI does; without a
            // template it gets the default prompt, as the agent page says.
            needs_prompt: true,
        }
    }

    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        ProcessConfig::parse(config).map(|_| ())
    }

    fn known_keys(&self) -> KnownKeys {
        ProcessConfig::known_keys()
    }

    fn config_schema(&self, models: &[crate::models::Model]) -> Value {
        crate::models::schema(&self.known_keys(), &["command"], models)
    }

    fn limits(&self, config: &Value) -> RunLimits {
        ProcessConfig::parse(config)
            .map(|c| RunLimits {
                timeout: c.timeout,
                grace: c.grace,
                callback: None,
            })
            .unwrap_or_default()
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome> {
        crate::config::note_ignored(&self.known_keys(), "process", &invocation.config, &*sink);
        Box::pin(run(invocation, sink))
    }

    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        default_cwd: &'a Path,
    ) -> BoxFuture<'a, crate::environment::Report> {
        Box::pin(crate::process_check::process(config, default_cwd))
    }
}

/// Why we had to stop the process ourselves.
#[derive(Clone, Copy)]
pub(crate) enum Stop {
    Timeout,
    Cancel,
}

/// One command to run as its own process group.
pub(crate) struct Spawn {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The child's variables on top of the allow-listed part of the
    /// server's environment (see `child_env`).
    pub env: BTreeMap<String, String>,
    /// Server variables this kind of child gets besides the allow-list.
    pub inherit: Vec<&'static str>,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
    pub grace: Duration,
    /// See [`crate::Invocation::stop_now`]: a stop without the grace.
    pub stop_now: CancellationToken,
    /// Run it in a bubblewrap sandbox (`crate::confine`).
    pub confine: Option<crate::confine::Request>,
}

/// How the process ended.
pub(crate) struct Exit {
    pub status: ExitStatus,
    /// Set when we stopped it, with the signal that did.
    pub stopped: Option<(Stop, &'static str)>,
    pub stderr_tail: Option<String>,
}

/// Receives stdout text as it is read, for adapters that parse it.
pub(crate) trait Tap: Send {
    fn text(&mut self, text: &str);
    /// The stream ended; text after the last newline may still be pending.
    fn end(&mut self);
}

/// The runtime's `PAPERCLIP_*` values identify the run and carry its key; an
/// agent's config must not be able to impersonate another run.
pub(crate) fn merged_env(
    run_env: &BTreeMap<String, String>,
    config_env: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = run_env.clone();
    for (k, v) in config_env {
        if !(k.starts_with("PAPERCLIP_") && run_env.contains_key(k)) {
            env.insert(k.clone(), v.clone());
        }
    }
    env
}

async fn run(inv: Invocation, sink: Arc<dyn RunSink>) -> Outcome {
    let cfg = match ProcessConfig::parse(&inv.config) {
        Ok(cfg) => cfg,
        Err(errors) => return Outcome::failed(ErrorCode::SpawnFailed, describe(&errors)),
    };
    let cwd = match working_dir(cfg.cwd.as_deref(), &inv.default_cwd).await {
        Ok(cwd) => cwd,
        Err(message) => return Outcome::failed(ErrorCode::InvalidWorkingDirectory, message),
    };
    let spawn = Spawn {
        program: cfg.command.clone(),
        args: cfg.args.clone(),
        cwd,
        env: merged_env(&inv.env, &cfg.env),
        inherit: Vec::new(),
        stdin: inv.prompt.clone(),
        timeout: cfg.timeout,
        grace: cfg.grace,
        stop_now: inv.stop_now.clone(),
        confine: crate::confine::request(&inv.config, "process", Vec::new(), Vec::new()),
    };
    let status = Box::new(crate::status_line::StatusTap::new(sink.clone()));
    match execute(&spawn, &inv.cancel, sink, Some(status)).await {
        Ok(exit) => outcome(&spawn, exit),
        Err(outcome) => outcome,
    }
}

/// Spawns `spec`, streams its output to the sink (and stdout to `tap`), and
/// waits for it to exit, stopping it on timeout or cancel. `Err` is an
/// outcome decided before or instead of an exit (not installed, cancelled
/// before start, wait failed).
pub(crate) async fn execute(
    spec: &Spawn,
    cancel: &CancellationToken,
    sink: Arc<dyn RunSink>,
    tap: Option<Box<dyn Tap>>,
) -> Result<Exit, Outcome> {
    execute_fed(spec, cancel, sink, tap, None).await
}

/// [`execute`] with stdin kept open and fed: each message from `feed` is
/// written as it comes (a protocol over stdio such as ACP); stdin closes
/// when every sender is dropped. `spec.stdin` must be `Some` (piped).
pub(crate) async fn execute_fed(
    spec: &Spawn,
    cancel: &CancellationToken,
    sink: Arc<dyn RunSink>,
    tap: Option<Box<dyn Tap>>,
    feed: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
) -> Result<Exit, Outcome> {
    let Some(request) = &spec.confine else {
        return execute_as(spec, spec, cancel, sink, tap, feed).await;
    };
    let confined = crate::confine::prepare(request, spec, &*sink).await?;
    let mut exit = execute_as(spec, &confined.spawn, cancel, sink.clone(), tap, feed).await;
    confined.finish(&mut exit, &*sink);
    exit
}

/// [`execute`] of `spec`, started as `launch` (itself, or its confinement
/// helper's command line).
async fn execute_as(
    spec: &Spawn,
    launch: &Spawn,
    cancel: &CancellationToken,
    sink: Arc<dyn RunSink>,
    tap: Option<Box<dyn Tap>>,
    feed: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
) -> Result<Exit, Outcome> {
    if cancel.is_cancelled() {
        return Err(Outcome::ended(
            OutcomeStatus::Cancelled,
            ErrorCode::Cancelled,
            "cancelled before start",
        ));
    }
    sink.event(
        "adapter.invoke",
        "info",
        &format!("started {}", spec.program),
        // `commandArgs` is upstream's name, which its clients read; `args`
        // stays for ours.
        json!({"command": spec.program, "args": spec.args, "commandArgs": spec.args,
            "cwd": spec.cwd.display().to_string()}),
    );

    let run_id = spec.env.get("PAPERCLIP_RUN_ID").map_or("", String::as_str);
    let marker = crate::tree::new_marker(run_id);
    let mut command = build_command(launch);
    // Set last: neither the config nor the run's env can choose it.
    command.env(TREE_VAR, &marker);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Err(spawn_error(&spec.program, e)),
    };
    // A zero pid would make killpg signal our own group.
    let Some(pid) = child.id().filter(|&p| p > 0) else {
        return Err(Outcome::failed(
            ErrorCode::SpawnFailed,
            "spawned process has no pid",
        ));
    };
    let mut guard = TreeGuard {
        tree: Tree::new(pid as i32, &marker),
        armed: true,
    };
    sink.process_started(pid, pid);
    sink.log(
        Stream::System,
        &format!("spawned {} (pid {pid})\n", spec.program),
    );

    let stdin_task = match (child.stdin.take(), spec.stdin.clone(), feed) {
        (Some(mut stdin), Some(_), Some(mut feed)) => Some(tokio::spawn(async move {
            while let Some(message) = feed.recv().await {
                if stdin.write_all(message.as_bytes()).await.is_err()
                    || stdin.flush().await.is_err()
                {
                    break;
                }
            }
            let _ = stdin.shutdown().await;
        })),
        (Some(mut stdin), Some(prompt), None) => Some(tokio::spawn(async move {
            // A child that never reads stdin closes it early; that is its business.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        })),
        _ => None,
    };
    let stderr_tail = Arc::new(Mutex::new(None));
    let readers = [
        child
            .stdout
            .take()
            .map(|r| spawn_reader(r, Stream::Stdout, sink.clone(), None, tap)),
        child.stderr.take().map(|r| {
            spawn_reader(
                r,
                Stream::Stderr,
                sink.clone(),
                Some(stderr_tail.clone()),
                None,
            )
        }),
    ];

    let deadline = spec.timeout.map(|t| Instant::now() + t);
    let stop = tokio::select! {
        status = child.wait() => Ok(status),
        _ = sleep_until(deadline) => Err(Stop::Timeout),
        _ = cancel.cancelled() => Err(Stop::Cancel),
    };
    let (status, stopped) = match stop {
        Ok(status) => {
            // The run ends when its command does; whatever it left running
            // (in its group or a session of its own) ends with it.
            guard.tree.end(spec.grace, "run ended", &*sink).await;
            (status, None)
        }
        Err(why) => {
            let (status, signal) = {
                let grace = if spec.stop_now.is_cancelled() {
                    Duration::ZERO
                } else {
                    spec.grace
                };
                terminate(&mut child, &guard.tree, grace, why, &*sink).await
            };
            (status, Some((why, signal)))
        }
    };
    guard.armed = false;

    drain(readers, &*sink).await;
    if let Some(task) = stdin_task {
        task.abort();
    }

    let status = status.map_err(|e| {
        Outcome::failed(ErrorCode::SpawnFailed, format!("waiting for process: {e}"))
    })?;
    let stderr_tail = stderr_tail.lock().unwrap().take();
    Ok(Exit {
        status,
        stopped,
        stderr_tail,
    })
}

fn build_command(spec: &Spawn) -> Command {
    let mut command = Command::new(&spec.program);
    crate::child_env::clear(&mut command, &spec.inherit);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .envs(&spec.env)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own process group, so signals reach everything the agent started.
        .process_group(0)
        .kill_on_drop(true);
    command
}

/// The configured working directory, which must exist, or the default one,
/// created on demand.
pub(crate) async fn working_dir(cwd: Option<&Path>, default_cwd: &Path) -> Result<PathBuf, String> {
    if let Some(cwd) = cwd {
        return match tokio::fs::metadata(cwd).await {
            Ok(m) if m.is_dir() => Ok(cwd.to_path_buf()),
            Ok(_) => Err(format!(
                "working directory {} is not a directory",
                cwd.display()
            )),
            Err(e) => Err(format!("working directory {}: {e}", cwd.display())),
        };
    }
    tokio::fs::create_dir_all(default_cwd)
        .await
        .map(|_| default_cwd.to_path_buf())
        .map_err(|e| {
            format!(
                "cannot create working directory {}: {e}",
                default_cwd.display()
            )
        })
}

pub(crate) fn spawn_error(command: &str, e: std::io::Error) -> Outcome {
    match e.kind() {
        ErrorKind::NotFound => Outcome::failed(
            ErrorCode::AdapterNotInstalled,
            format!("command not found: {command} (is it installed and on PATH?)"),
        ),
        _ => Outcome::failed(
            ErrorCode::SpawnFailed,
            format!("failed to start {command}: {e}"),
        ),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// SIGTERM the run's processes, give them `grace` to exit, then SIGKILL
/// whatever is left. Returns the leader's exit status and the signal that
/// ended it.
async fn terminate(
    child: &mut Child,
    tree: &Tree,
    grace: Duration,
    why: Stop,
    sink: &dyn RunSink,
) -> (std::io::Result<ExitStatus>, &'static str) {
    let reason = match why {
        Stop::Timeout => "timeout",
        Stop::Cancel => "cancel",
    };
    tree.signal(libc::SIGTERM, reason, sink);
    let deadline = Instant::now() + grace;
    if let Ok(status) = tokio::time::timeout_at(deadline, child.wait()).await {
        // The leader is gone; the rest gets what is left of the grace period.
        tree.wait_gone(deadline).await;
        if tree.alive() {
            tree.signal(libc::SIGKILL, reason, sink);
        }
        return (status, "SIGTERM");
    }
    tree.signal(libc::SIGKILL, reason, sink);
    (child.wait().await, "SIGKILL")
}

async fn drain(readers: [Option<tokio::task::JoinHandle<()>>; 2], sink: &dyn RunSink) {
    let mut readers: Vec<_> = readers.into_iter().flatten().collect();
    let all = async {
        for r in readers.iter_mut() {
            let _ = r.await;
        }
    };
    if tokio::time::timeout(DRAIN_AFTER_EXIT, all).await.is_err() {
        for r in &readers {
            r.abort();
        }
        sink.log(
            Stream::System,
            "output still open after the process exited (a background child holds it); stopped reading\n",
        );
    }
}

/// The outcome of a plain process: its exit code decides.
fn outcome(spec: &Spawn, exit: Exit) -> Outcome {
    let Exit {
        status,
        stopped,
        stderr_tail,
    } = exit;
    let mut out = match stopped {
        Some((Stop::Timeout, _)) => {
            let secs = spec.timeout.unwrap_or_default().as_secs_f64();
            Outcome::ended(
                OutcomeStatus::TimedOut,
                ErrorCode::Timeout,
                format!("timed out after {secs}s"),
            )
        }
        Some((Stop::Cancel, _)) => {
            Outcome::ended(OutcomeStatus::Cancelled, ErrorCode::Cancelled, "cancelled")
        }
        None => match (status.code(), status.signal()) {
            (Some(0), _) => Outcome::succeeded(),
            (Some(code), _) => {
                let mut msg = format!("process exited with code {code}");
                if let Some(line) = &stderr_tail {
                    msg.push_str(": ");
                    msg.push_str(truncate(line, 500));
                }
                // A script that calls a model provider can hit its usage
                // limit like a coding CLI; said so, the runtime waits for the
                // limit to lift instead of counting a failure.
                let code = match crate::cli::classify::classify(&msg) {
                    Some(ErrorCode::RateLimited) => ErrorCode::RateLimited,
                    _ => ErrorCode::NonzeroExit,
                };
                Outcome::failed(code, msg)
            }
            (None, signal) => {
                let name = signal_name(signal.unwrap_or_default());
                Outcome::failed(ErrorCode::NonzeroExit, format!("process killed by {name}"))
            }
        },
    };
    out.exit_code = status.code();
    out.signal = match stopped {
        Some((_, name)) => Some(name.to_string()),
        None => status.signal().map(|s| signal_name(s).to_string()),
    };
    out
}

pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_process_keys_are_known_and_others_named() {
        let good = json!({
            "command": "sh", "args": ["-c", "true"], "cwd": "/tmp", "env": { "MY_KNOB": "1" },
            "timeoutSec": 5, "graceSec": 1, "promptTemplate": "Do {{task.identifier}}",
            "instructionsFilePath": "/tmp/AGENTS.md", "paperclipSkillSync": {},
            "networkScope": "deny",
        });
        crate::config::assert_keys(&ProcessAdapter, good, "customKnob");
    }
}
