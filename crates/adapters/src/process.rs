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

use crate::config::{describe, truncate, Fields};
use crate::output::spawn_reader;
use crate::{
    Adapter, BoxFuture, CancellationToken, Capabilities, ConfigError, ErrorCode, Invocation,
    Outcome, OutcomeStatus, RunSink, Stream,
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
            needs_prompt: false,
        }
    }

    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        ProcessConfig::parse(config).map(|_| ())
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(run(invocation, sink))
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
    /// The complete overlay on the server's environment.
    pub env: BTreeMap<String, String>,
    pub stdin: Option<String>,
    pub timeout: Option<Duration>,
    pub grace: Duration,
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
        stdin: inv.prompt.clone(),
        timeout: cfg.timeout,
        grace: cfg.grace,
    };
    match execute(&spawn, &inv.cancel, sink, None).await {
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
        json!({"command": spec.program, "args": spec.args, "cwd": spec.cwd.display().to_string()}),
    );

    let mut command = build_command(spec);
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
    let group = GroupGuard {
        pgid: pid as i32,
        armed: true,
    };
    sink.process_started(pid, pid);
    sink.log(
        Stream::System,
        &format!("spawned {} (pid {pid})\n", spec.program),
    );

    let stdin_task = match (child.stdin.take(), spec.stdin.clone()) {
        (Some(mut stdin), Some(prompt)) => Some(tokio::spawn(async move {
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
        Ok(status) => (status, None),
        Err(why) => {
            let (status, signal) = terminate(&mut child, group.pgid, spec.grace, why, &*sink).await;
            (status, Some((why, signal)))
        }
    };
    group.disarm();

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

/// SIGTERM the group, give it `grace` to exit, then SIGKILL whatever is left.
/// Returns the leader's exit status and the signal that ended it.
async fn terminate(
    child: &mut Child,
    pgid: i32,
    grace: Duration,
    why: Stop,
    sink: &dyn RunSink,
) -> (std::io::Result<ExitStatus>, &'static str) {
    signal_group(pgid, libc::SIGTERM, why, sink);
    let deadline = Instant::now() + grace;
    if let Ok(status) = tokio::time::timeout_at(deadline, child.wait()).await {
        // The leader is gone; its children get the rest of the grace period.
        while group_alive(pgid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if group_alive(pgid) {
            signal_group(pgid, libc::SIGKILL, why, sink);
        }
        return (status, "SIGTERM");
    }
    signal_group(pgid, libc::SIGKILL, why, sink);
    (child.wait().await, "SIGKILL")
}

fn signal_group(pgid: i32, signal: i32, why: Stop, sink: &dyn RunSink) {
    // SAFETY: killpg has no memory-safety preconditions. Group 0 would mean
    // our own, hence the check.
    if pgid <= 0 || unsafe { libc::killpg(pgid, signal) } != 0 {
        return; // ESRCH: everything already exited.
    }
    let name = signal_name(signal);
    let reason = match why {
        Stop::Timeout => "timeout",
        Stop::Cancel => "cancel",
    };
    let message = format!("sent {name} to process group {pgid}");
    sink.log(Stream::System, &format!("{message} ({reason})\n"));
    sink.event(
        "adapter.signal",
        "warn",
        &message,
        json!({"signal": name, "processGroupId": pgid, "reason": reason}),
    );
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::killpg(pgid, 0) } != 0 {
        return false;
    }
    // Orphaned members become zombies until init reaps them, and containers
    // often run an init that never does; signal 0 still "finds" those.
    live_members_in_proc(pgid).unwrap_or(true)
}

/// Whether /proc lists a non-zombie process in group `pgid`; `None` when
/// /proc cannot be read.
fn live_members_in_proc(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let live = entries.flatten().any(|entry| {
        let name = entry.file_name();
        if !name
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parens.
        let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        group == Some(pgid) && !matches!(state, Some("Z" | "X"))
    });
    Some(live)
}

/// Kills the process group if the run is dropped mid-flight (runtime
/// shutdown, aborted task); `kill_on_drop` alone would only reach the leader.
struct GroupGuard {
    pgid: i32,
    armed: bool,
}

impl GroupGuard {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed && self.pgid > 0 {
            // SAFETY: see signal_group.
            unsafe { libc::killpg(self.pgid, libc::SIGKILL) };
        }
    }
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
                Outcome::failed(ErrorCode::NonzeroExit, msg)
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

fn signal_name(signal: i32) -> String {
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
    fn proc_scan_finds_our_own_group_and_not_a_free_one() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        assert_eq!(live_members_in_proc(own), Some(true));
        assert_eq!(live_members_in_proc(i32::MAX), Some(false));
    }
}
