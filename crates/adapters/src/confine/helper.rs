//! This binary re-executed around a confined agent, in two roles.
//!
//! - **outer**: the run's root process, outside the sandbox. Serves the
//!   proxy on a unix socket (for a network-confined run), starts `bwrap`,
//!   waits for it and exits as it did.
//! - **inner**: inside a network-confined sandbox, the agent's parent.
//!   Listens on the sandbox's loopback (the proxy port and each mirrored
//!   loopback destination), relays every connection over the socket, runs
//!   the agent and exits as it did.
//!
//! Stopping a run signals its process group and every process carrying its
//! marker. bwrap dies of SIGTERM and would take the sandbox down at once,
//! so it runs in a group of its own without the marker (the sandbox gets
//! the marker back through `--setenv`): a stop's SIGTERM reaches the agent
//! and its grace period, not bwrap. Both helpers catch SIGTERM and wait
//! for their child; a caught signal is reset for the programs they start.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, UnixListener, UnixStream};

use super::allow::Entry;
use super::plan::SOCKET_FILE;
use super::HELPER_ARG;
use crate::tree::TREE_VAR;

/// The outer helper's instructions (JSON in its `argv[3]`).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Outer {
    pub bwrap: PathBuf,
    /// Everything before the command.
    pub args: Vec<String>,
    pub program: String,
    pub program_args: Vec<String>,
    pub net: Option<Net>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Net {
    /// Holds the socket and the record of blocked requests.
    pub dir: PathBuf,
    pub allow: Vec<Entry>,
    pub mirrors: Vec<Mirror>,
    /// The proxy's port on the sandbox's loopback.
    pub proxy_port: u16,
}

/// A loopback destination reachable at the same port inside.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Mirror {
    pub host: String,
    pub port: u16,
}

/// The inner helper's instructions.
#[derive(Debug, Serialize, Deserialize)]
struct Inner {
    socket: PathBuf,
    ports: Vec<u16>,
    proxy_port: u16,
    /// The descriptor this binary was started through; not the agent's.
    exe_fd: i32,
    program: String,
    args: Vec<String>,
}

/// The helper's `main`: `argv[2]` is the role, `argv[3]` its JSON.
pub(super) fn main(args: Vec<OsString>) -> i32 {
    let role = args.first().and_then(|a| a.to_str()).unwrap_or_default();
    let spec = args.get(1).and_then(|a| a.to_str()).unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("paperclip confinement: cannot start: {e}");
            return 125;
        }
    };
    let status = match role {
        "outer" => match serde_json::from_str::<Outer>(spec) {
            Ok(outer) => runtime.block_on(outer_main(outer)),
            Err(e) => Err(format!("bad instructions: {e}")),
        },
        "inner" => match serde_json::from_str::<Inner>(spec) {
            Ok(inner) => runtime.block_on(inner_main(inner)),
            Err(e) => Err(format!("bad instructions: {e}")),
        },
        _ => Err(format!("unknown role {role:?}")),
    };
    drop(runtime);
    match status {
        Ok(status) => exit_as(status),
        Err(why) => {
            eprintln!("paperclip confinement: {why}");
            125
        }
    }
}

async fn outer_main(spec: Outer) -> Result<ExitStatus, String> {
    let _term = catch_term()?;
    let mut args = spec.args;
    if let Some(marker) = std::env::var_os(TREE_VAR) {
        args.extend(["--setenv".into(), TREE_VAR.into()]);
        args.push(marker.to_string_lossy().into_owned());
    }
    args.push("--".into());
    let mut _exe = None;
    if let Some(net) = &spec.net {
        let socket = net.dir.join(SOCKET_FILE);
        let listener = UnixListener::bind(&socket)
            .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
        let state = Arc::new(super::proxy::State::new(
            net.allow.clone(),
            net.mirrors.clone(),
            net.dir.join(super::plan::BLOCKED_FILE),
        ));
        tokio::spawn(super::proxy::serve(listener, state));
        let exe = ExeFd::open()?;
        let inner = Inner {
            socket,
            ports: net.mirrors.iter().map(|m| m.port).collect(),
            proxy_port: net.proxy_port,
            exe_fd: exe.0,
            program: spec.program,
            args: spec.program_args,
        };
        let inner = serde_json::to_string(&inner).map_err(|e| e.to_string())?;
        args.extend([
            format!("/proc/self/fd/{}", exe.0),
            HELPER_ARG.into(),
            "inner".into(),
            inner,
        ]);
        _exe = Some(exe);
    } else {
        args.push(spec.program);
        args.extend(spec.program_args);
    }
    let mut child = tokio::process::Command::new(&spec.bwrap)
        .args(&args)
        .env_remove(TREE_VAR)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start bubblewrap ({}): {e}", spec.bwrap.display()))?;
    child.wait().await.map_err(|e| e.to_string())
}

async fn inner_main(spec: Inner) -> Result<ExitStatus, String> {
    let _term = catch_term()?;
    // SAFETY: fcntl on a descriptor number; a wrong one fails harmlessly.
    unsafe { libc::fcntl(spec.exe_fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let socket = Arc::new(spec.socket);
    let mut ports: Vec<(u16, bool)> = spec.ports.iter().map(|p| (*p, false)).collect();
    ports.push((spec.proxy_port, true));
    for (port, proxy) in ports {
        let v4 = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port} in the sandbox: {e}"))?;
        tokio::spawn(relay(v4, socket.clone(), port, proxy));
        // `localhost` may resolve to ::1 first; best effort.
        if let Ok(v6) = TcpListener::bind(("::1", port)).await {
            tokio::spawn(relay(v6, socket.clone(), port, proxy));
        }
    }
    let mut child = tokio::process::Command::new(&spec.program)
        .args(&spec.args)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", spec.program))?;
    child.wait().await.map_err(|e| e.to_string())
}

/// Carries each connection to `port` over the socket to the outer helper,
/// naming what it is for: the proxy, or a mirrored loopback port.
async fn relay(listener: TcpListener, socket: Arc<PathBuf>, port: u16, proxy: bool) {
    loop {
        let Ok((mut tcp, _)) = listener.accept().await else {
            continue;
        };
        let socket = socket.clone();
        tokio::spawn(async move {
            let Ok(mut out) = UnixStream::connect(&*socket).await else {
                return;
            };
            let preamble = if proxy {
                "P\n".to_string()
            } else {
                format!("M {port}\n")
            };
            if out.write_all(preamble.as_bytes()).await.is_ok() {
                let _ = tokio::io::copy_bidirectional(&mut tcp, &mut out).await;
            }
        });
    }
}

/// SIGTERM caught (and ignored) while this process lives: the helper
/// outlives its child, never the other way round.
fn catch_term() -> Result<tokio::signal::unix::Signal, String> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot handle SIGTERM: {e}"))
}

/// `/proc/self/exe` opened by path, inherited by bwrap: the sandbox starts
/// the inner helper through it without the binary being visible inside.
struct ExeFd(i32);

impl ExeFd {
    fn open() -> Result<ExeFd, String> {
        // SAFETY: a NUL-terminated path; O_PATH without O_CLOEXEC on purpose.
        let fd = unsafe { libc::open(c"/proc/self/exe".as_ptr(), libc::O_PATH) };
        if fd < 0 {
            return Err(format!(
                "cannot open this program: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(ExeFd(fd))
    }
}

impl Drop for ExeFd {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

/// Ends this process as `status` ended its child: the same code, or the
/// same signal (so the run reads "killed by SIGKILL", not "exit 137").
fn exit_as(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    let signal = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: restoring the default action and signalling ourselves.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
    }
    128 + signal
}
