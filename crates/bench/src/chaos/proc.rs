//! The server under chaos, killed with SIGKILL and started again on the same
//! data dir, database and port; and what `/proc` says is still alive.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const LISTENING: &str = "Paperclip listening on ";

pub struct ServerProc {
    binary: PathBuf,
    pub data_dir: PathBuf,
    database_url: Option<String>,
    pub port: u16,
    pub base: String,
    child: Child,
}

impl ServerProc {
    pub async fn start(
        binary: &Path,
        data_dir: &Path,
        database_url: Option<&str>,
    ) -> anyhow::Result<ServerProc> {
        let (child, base) = spawn(binary, data_dir, database_url, 0, &[], &[]).await?;
        let port = base
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches('/').parse().ok())
            .context("no port in the server's address")?;
        Ok(ServerProc {
            binary: binary.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            database_url: database_url.map(str::to_string),
            port,
            base,
            child,
        })
    }

    /// The server's process id, for reading its memory from /proc.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// SIGKILL, as a crash or the OOM killer would; waits for the exit.
    pub async fn kill9(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// Starts the server again where clients left it (same port), on the
    /// same data. A port taken meanwhile is a machine accident, not a finding,
    /// so then any free port will do and `base` moves.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        let db = self.database_url.as_deref();
        let (child, base) = match spawn(&self.binary, &self.data_dir, db, self.port, &[], &[]).await
        {
            Ok(started) => started,
            Err(err) => {
                eprintln!(
                    "chaos: restart on port {} failed ({err:#}); any port",
                    self.port
                );
                spawn(&self.binary, &self.data_dir, db, 0, &[], &[]).await?
            }
        };
        self.child = child;
        self.base = base;
        Ok(())
    }
}

/// Starts the binary (`run` with `extra` flags and `env`, its log appended
/// to `server.log` in the data dir) and waits for the address it prints;
/// the chaos driver's servers and the fleet's instances.
pub(crate) async fn spawn(
    binary: &Path,
    data_dir: &Path,
    database_url: Option<&str>,
    port: u16,
    extra: &[String],
    env: &[(&str, String)],
) -> anyhow::Result<(Child, String)> {
    let mut cmd = Command::new(binary);
    cmd.arg("run")
        .arg("--port")
        .arg(port.to_string())
        .arg("--data-dir")
        .arg(data_dir)
        .args(extra);
    for var in [
        "DATABASE_URL",
        "PAPERCLIP_PORT",
        "PAPERCLIP_BIND",
        "PAPERCLIP_CONFIG",
        "PAPERCLIP_DATA_DIR",
    ] {
        cmd.env_remove(var);
    }
    if let Some(url) = database_url {
        cmd.env("DATABASE_URL", url);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    // Every incarnation's log in one file: the evidence when a check fails.
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(data_dir.join("server.log"))?;
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("spawning {}", binary.display()))?;
    let stdout = child.stdout.take().context("no stdout pipe")?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    // Keep draining: a closed pipe would fail the server's later prints.
    tokio::spawn(async move {
        let mut tx = Some(tx);
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix(LISTENING) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        }
    });
    match tokio::time::timeout(Duration::from_secs(60), rx).await {
        Ok(Ok(base)) => Ok((child, base)),
        _ => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            bail!("the server did not report its address (see server.log)")
        }
    }
}

/// Live (not zombie) processes whose environment holds `needle`
/// (`NAME=value` or a prefix of it); pids are recycled, so a process is
/// identified by what it carries, not by its number alone.
pub fn live_with_env(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(hit) = env_entry(pid, needle) {
            if !is_zombie(pid) {
                found.push((pid, hit));
            }
        }
    }
    found
}

/// Whether the process `pid` is alive and carries `needle` in its environment.
pub fn alive_with_env(pid: u32, needle: &str) -> bool {
    env_entry(pid, needle).is_some() && !is_zombie(pid)
}

fn env_entry(pid: u32, needle: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|b| *b == 0)
        .find(|e| e.starts_with(needle.as_bytes()))
        .map(|e| String::from_utf8_lossy(e).into_owned())
}

fn is_zombie(pid: u32) -> bool {
    // The state follows the parenthesised command name, which may hold spaces.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}
