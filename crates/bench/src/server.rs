//! Starting and stopping the real `paperclip` binary, as a user would run it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The line `paperclip run` prints once it is bound; the rest is the address.
const LISTENING: &str = "Paperclip listening on ";

pub struct Server {
    pub base: String,
    pub pid: u32,
    /// Spawn until the first `GET /api/health` answered 200.
    pub start_to_healthy: Duration,
    data_dir: PathBuf,
    child: Child,
}

impl Server {
    /// Spawns `binary run --port 0` on a fresh temp data dir and waits until it
    /// is healthy. Without `database_url` the server uses SQLite in that dir.
    pub async fn start(binary: &Path, database_url: Option<&str>) -> anyhow::Result<Server> {
        let data_dir =
            std::env::temp_dir().join(format!("paperclip-bench-{}", uuid::Uuid::new_v4()));
        let mut cmd = Command::new(binary);
        cmd.arg("run")
            .arg("--port")
            .arg("0")
            .arg("--data-dir")
            .arg(&data_dir);
        // The caller's environment must not redirect the server elsewhere.
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
        // A backup falling due in a long run would be measured with the load.
        cmd.env("PAPERCLIP_DB_BACKUP_ENABLED", "false");
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);

        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", binary.display()))?;
        let pid = child.id().context("server exited at once")?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        // Keep draining stdout after the address line: closing the pipe would
        // make the server's later prints fail.
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
        let base = tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .context("server did not print its address within 60 s")?
            .context("server exited before printing its address")?;
        wait_healthy(&base).await?;
        Ok(Server {
            base,
            pid,
            start_to_healthy: started.elapsed(),
            data_dir,
            child,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Resident set size now and at its peak, in KiB, from /proc.
    pub fn rss_kib(&self) -> anyhow::Result<Rss> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("reading /proc/<pid>/status (Linux only)")?;
        let field = |name: &str| -> anyhow::Result<u64> {
            let line = status
                .lines()
                .find(|l| l.starts_with(name))
                .with_context(|| format!("{name} missing from /proc/<pid>/status"))?;
            let kib = line[name.len()..].trim().trim_end_matches("kB").trim();
            Ok(kib.parse()?)
        };
        Ok(Rss {
            now: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

#[derive(Clone, Copy)]
pub struct Rss {
    pub now: u64,
    pub peak: u64,
}

/// Polls `/api/health` until 200. The listener is bound before the address is
/// printed, so this normally succeeds on the first try.
async fn wait_healthy(base: &str) -> anyhow::Result<()> {
    // A fresh client per server so no pooled connection hides a slow accept.
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.get(format!("{base}/api/health")).send().await {
            Ok(resp) if resp.status() == reqwest::StatusCode::OK => return Ok(()),
            _ if Instant::now() > deadline => bail!("{base}/api/health not 200 within 60 s"),
            _ => tokio::time::sleep(Duration::from_millis(1)).await,
        }
    }
}
