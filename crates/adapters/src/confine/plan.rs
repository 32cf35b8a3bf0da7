//! From a spawn and its confinement request to the helper's command line
//! (is bubblewrap usable here; the sandbox from `sandbox.rs`, the hosts
//! from `reach.rs`), and, after the exit, what the run says about it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use super::allow::Entry;
use super::bwrap;
use super::helper::{Net, Outer};
use super::reach::{allow_list, mirrors};
use super::sandbox::layout;
use super::{Network, Request, HELPER_ARG};
use crate::process::{Exit, Spawn};
use crate::{ErrorCode, Outcome, RunSink, Stream};

/// A spawn rewritten to start through the helper, and what the run's
/// outcome needs from it afterwards.
pub(crate) struct Prepared {
    pub spawn: Spawn,
    /// Per run: the proxy's socket and its record of blocked requests.
    dir: PathBuf,
    writable: Vec<PathBuf>,
}

/// Names the helper's record of blocked destinations, one per line.
pub(super) const BLOCKED_FILE: &str = "blocked";
pub(super) const SOCKET_FILE: &str = "p.sock";

/// How the run's environment is read: its own variables, else the
/// server's (the part a child inherits).
pub(super) type EnvFn<'a> = dyn Fn(&str) -> Option<String> + Sync + 'a;

/// Variables telling programs in the sandbox where the proxy is.
const PROXY_VARS: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
const NO_PROXY: &str = "localhost,127.0.0.1,::1";

pub(crate) async fn prepare(
    req: &Request,
    spec: &Spawn,
    sink: &dyn RunSink,
) -> Result<Prepared, Outcome> {
    let c = &req.confinement;
    if !super::helper_ready() {
        return Err(Outcome::failed(
            ErrorCode::SpawnFailed,
            "this agent asks for confinement, but this program cannot confine processes \
             (only the paperclip server can); remove filesystemScope/networkScope to run it",
        ));
    }
    let bwrap = find_bwrap().ok_or_else(|| {
        Outcome::failed(
            ErrorCode::AdapterNotInstalled,
            "this agent's adapterConfig asks for confinement (filesystemScope/networkScope), \
             but bubblewrap (`bwrap`) is not installed on the Paperclip host: install it \
             (Debian/Ubuntu: apt-get install bubblewrap), or remove those keys to run the \
             agent unconfined",
        )
    })?;
    probe(&bwrap, c.network.is_some())
        .await
        .map_err(|why| Outcome::failed(ErrorCode::SpawnFailed, why))?;

    let env = |name: &str| -> Option<String> {
        spec.env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .filter(|v| !v.is_empty())
    };
    let mut args = bwrap::namespace_args(c.network.is_some());
    let mut writable = Vec::new();
    if c.filesystem {
        if spec.cwd.parent().is_none() {
            return Err(Outcome::failed(
                ErrorCode::InvalidWorkingDirectory,
                "cannot confine an agent whose working directory is /: set adapterConfig.cwd",
            ));
        }
        let layout = layout(req, spec, &env);
        writable = layout
            .binds
            .iter()
            .filter(|b| b.writable)
            .map(|b| b.path.clone())
            .collect();
        args.extend(bwrap::workspace_args(&layout));
        args.extend(["--setenv".into(), "TMPDIR".into(), "/tmp".into()]);
    } else {
        args.extend(bwrap::host_args());
    }
    args.extend(["--chdir".into(), spec.cwd.to_string_lossy().into_owned()]);

    let dir = run_dir().map_err(|e| {
        Outcome::failed(
            ErrorCode::SpawnFailed,
            format!("cannot create the confinement directory: {e}"),
        )
    })?;
    let net = match &c.network {
        None => None,
        Some(network) => {
            let allow = allow_list(req.adapter, network, spec, &env).await;
            let mirrors = mirrors(&allow);
            let proxy_port = (3128..).find(|p| !mirrors.iter().any(|m| m.port == *p));
            let proxy_port = proxy_port.unwrap_or(3128);
            let proxy = format!("http://127.0.0.1:{proxy_port}");
            for var in PROXY_VARS {
                args.extend(["--setenv".into(), var.to_string(), proxy.clone()]);
            }
            for var in ["NO_PROXY", "no_proxy"] {
                args.extend(["--setenv".into(), var.into(), NO_PROXY.into()]);
            }
            if c.filesystem {
                // The socket's directory, at the same path inside.
                let d = dir.to_string_lossy().into_owned();
                args.extend(["--ro-bind".into(), d.clone(), d]);
            }
            Some(Net {
                dir: dir.clone(),
                allow,
                mirrors,
                proxy_port,
            })
        }
    };
    report(req, &writable, net.as_ref(), sink);
    let outer = Outer {
        bwrap,
        args,
        program: spec.program.clone(),
        program_args: spec.args.clone(),
        net,
    };
    let outer = serde_json::to_string(&outer)
        .map_err(|e| Outcome::failed(ErrorCode::SpawnFailed, format!("confinement plan: {e}")))?;
    Ok(Prepared {
        spawn: Spawn {
            // The image this server runs, even if its file was replaced.
            program: "/proc/self/exe".into(),
            args: vec![HELPER_ARG.into(), "outer".into(), outer],
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
            inherit: spec.inherit.clone(),
            stdin: spec.stdin.clone(),
            timeout: spec.timeout,
            grace: spec.grace,
            stop_now: spec.stop_now.clone(),
            confine: None,
        },
        dir,
        writable,
    })
}

impl Prepared {
    /// After the exit: reports blocked requests, and gives a failed run's
    /// last words the reason a confined agent most likely failed for.
    pub(crate) fn finish(self, exit: &mut Result<Exit, Outcome>, sink: &dyn RunSink) {
        let blocked: Vec<String> = std::fs::read_to_string(self.dir.join(BLOCKED_FILE))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let _ = std::fs::remove_dir_all(&self.dir);
        if !blocked.is_empty() {
            let message = format!(
                "network access blocked by the run's allow-list: {}",
                blocked.join(", ")
            );
            sink.event(
                "adapter.confine.blocked",
                "warn",
                &message,
                json!({ "blocked": blocked }),
            );
        }
        let Ok(exit) = exit else { return };
        if exit.stopped.is_some() || exit.status.success() {
            return;
        }
        let mut notes = Vec::new();
        if !blocked.is_empty() {
            notes.push(format!(
                "blocked by the network allow-list: {}",
                blocked.join(", ")
            ));
        }
        if let Some(first) = self.writable.first() {
            let more = match self.writable.len() - 1 {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            };
            notes.push(format!(
                "confined: writes only in {}{more} and a private /tmp; the rest is read-only or hidden",
                first.display()
            ));
        }
        if notes.is_empty() {
            return;
        }
        let note = notes.join("; ");
        exit.stderr_tail = Some(match exit.stderr_tail.take() {
            Some(tail) => format!("{} [{note}]", crate::config::truncate(&tail, 300)),
            None => format!("[{note}]"),
        });
    }
}

/// The run log line and timeline event saying how the run is confined.
fn report(req: &Request, writable: &[PathBuf], net: Option<&Net>, sink: &dyn RunSink) {
    let c = &req.confinement;
    let mut parts = Vec::new();
    if c.filesystem {
        let list: Vec<String> = writable.iter().map(|p| p.display().to_string()).collect();
        parts.push(format!(
            "writes only in {} and a private /tmp",
            list.join(", ")
        ));
    }
    if let Some(net) = net {
        let list: Vec<String> = net.allow.iter().map(Entry::display).collect();
        parts.push(format!("network only to {}", list.join(", ")));
    }
    let message = format!("confined with bubblewrap: {}", parts.join("; "));
    sink.log(Stream::System, &format!("{message}\n"));
    let scope = match &c.network {
        None => None,
        Some(Network::Deny) => Some("deny"),
        Some(Network::Allowlist(_)) => Some("allowlist"),
    };
    sink.event(
        "adapter.confine",
        "info",
        &message,
        json!({
            "filesystemScope": c.filesystem.then_some("workspace"),
            "writable": writable,
            "networkScope": scope,
            "networkAllowlist": net.map(|n| n.allow.iter().map(Entry::display).collect::<Vec<_>>()),
        }),
    );
}

/// `PAPERCLIP_BWRAP`, else `bwrap` on the server's PATH.
fn find_bwrap() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PAPERCLIP_BWRAP").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
}

/// Runs bwrap once with the namespaces a run needs; a kernel or policy
/// that forbids them fails here, with bwrap's own words, instead of as an
/// agent that exited 1 for no visible reason. Remembered once it works.
async fn probe(bwrap: &Path, net: bool) -> Result<(), String> {
    static WORKS: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];
    if WORKS[net as usize].load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut cmd = tokio::process::Command::new(bwrap);
    cmd.args(bwrap::namespace_args(net))
        .args([
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    let why = match tokio::time::timeout(Duration::from_secs(20), cmd.output()).await {
        Ok(Ok(out)) if out.status.success() => {
            WORKS[net as usize].store(true, Ordering::Relaxed);
            return Ok(());
        }
        Ok(Ok(out)) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
        Ok(Err(e)) => format!("cannot run {}: {e}", bwrap.display()),
        Err(_) => "bwrap did not finish a trial run in 20 s".into(),
    };
    Err(format!(
        "this agent asks for confinement, but bubblewrap cannot create a sandbox on this host \
         ({why}); the kernel must allow user namespaces (sysctl kernel.unprivileged_userns_clone=1 \
         and user.max_user_namespaces > 0; on Ubuntu 24.04+ also an AppArmor profile allowing \
         bwrap), or remove filesystemScope/networkScope from the agent to run it unconfined"
    ))
}

/// A fresh private directory for one run's socket (short: a socket path
/// has at most 107 bytes).
fn run_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `len` bytes into the buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        return Err(std::io::Error::last_os_error());
    }
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("pcc-{name}"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
