//! One control-plane instance of the fleet: the release binary on the shared
//! Postgres database with a data dir of its own, killed as a host dies
//! (SIGKILL of the server and of every process below it, agents included)
//! and started again on the same port, data dir and test clock's day.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, Utc};
use tokio::process::Child;

/// What one incarnation cost, read from /proc just before it died.
#[derive(Debug, Default, Clone, Copy)]
pub struct Usage {
    /// utime + stime of the server process, in clock ticks.
    pub cpu_ticks: u64,
    /// Wall time the incarnation was up.
    pub up: Duration,
}

pub struct Instance {
    pub name: String,
    binary: PathBuf,
    pub data_dir: PathBuf,
    database_url: String,
    pub port: u16,
    pub base: String,
    child: Option<Child>,
    pub pid: Option<u32>,
    started: Instant,
    /// Finished incarnations' CPU and wall time.
    pub past: Vec<Usage>,
    /// RSS samples of every incarnation, KiB.
    pub rss_samples: Vec<u64>,
    pub peak_rss_kib: u64,
}

impl Instance {
    pub async fn start(
        name: &str,
        binary: &Path,
        data_dir: &Path,
        database_url: &str,
        clock: DateTime<Utc>,
    ) -> anyhow::Result<Instance> {
        std::fs::create_dir_all(data_dir)?;
        let mut me = Instance {
            name: name.to_string(),
            binary: binary.to_path_buf(),
            data_dir: data_dir.to_path_buf(),
            database_url: database_url.to_string(),
            port: 0,
            base: String::new(),
            child: None,
            pid: None,
            started: Instant::now(),
            past: Vec::new(),
            rss_samples: Vec::new(),
            peak_rss_kib: 0,
        };
        me.spawn(clock).await?;
        me.port = me
            .base
            .rsplit(':')
            .next()
            .and_then(|p| p.trim_end_matches('/').parse().ok())
            .context("no port in the server's address")?;
        Ok(me)
    }

    pub fn is_up(&self) -> bool {
        self.child.is_some()
    }

    /// Starts the instance again on its port, its test clock at `clock`.
    pub async fn restart(&mut self, clock: DateTime<Utc>) -> anyhow::Result<()> {
        if let Err(err) = self.spawn(clock).await {
            eprintln!(
                "fleet: {} restart on port {} failed ({err:#}); any port",
                self.name, self.port
            );
            let port = std::mem::take(&mut self.port);
            self.spawn(clock).await?;
            self.port = port_of(&self.base).unwrap_or(port);
        }
        Ok(())
    }

    async fn spawn(&mut self, clock: DateTime<Utc>) -> anyhow::Result<()> {
        let extra = ["--test-clock".to_string(), clock.to_rfc3339()];
        let env = [("PAPERCLIP_INSTANCE_ID", format!("fleet-{}", self.name))];
        let (child, base) = crate::chaos::proc::spawn(
            &self.binary,
            &self.data_dir,
            Some(&self.database_url),
            self.port,
            &extra,
            &env,
        )
        .await
        .with_context(|| format!("starting instance {}", self.name))?;
        self.pid = child.id();
        self.child = Some(child);
        self.base = base;
        self.started = Instant::now();
        Ok(())
    }

    /// Reads RSS now (kept as a sample) from /proc.
    pub fn sample(&mut self) {
        let Some(pid) = self.pid.filter(|_| self.is_up()) else {
            return;
        };
        if let Some((now, peak)) = rss(pid) {
            self.rss_samples.push(now);
            self.peak_rss_kib = self.peak_rss_kib.max(peak);
        }
    }

    /// CPU ticks and wall time of every incarnation so far, this one included.
    pub fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for u in &self.past {
            total.cpu_ticks += u.cpu_ticks;
            total.up += u.up;
        }
        if let (true, Some(pid)) = (self.is_up(), self.pid) {
            total.cpu_ticks += cpu_ticks(pid).unwrap_or(0);
            total.up += self.started.elapsed();
        }
        total
    }

    /// As a host dies: the server is frozen first (so it forks nothing
    /// more), then it and every process below it get SIGKILL. Returns the
    /// run ids its agents' processes carried, and when it died.
    pub async fn kill9(&mut self) -> (Vec<String>, DateTime<Utc>) {
        let Some(mut child) = self.child.take() else {
            return (Vec::new(), Utc::now());
        };
        let mut runs = Vec::new();
        if let Some(pid) = child.id() {
            self.sample();
            signal("STOP", &[pid]);
            let tree = descendants(pid);
            for p in &tree {
                if let Some(run) = env_value(*p, "PAPERCLIP_RUN_ID") {
                    if !runs.contains(&run) {
                        runs.push(run);
                    }
                }
            }
            self.past.push(Usage {
                cpu_ticks: cpu_ticks(pid).unwrap_or(0),
                up: self.started.elapsed(),
            });
            let mut all = vec![pid];
            all.extend(tree);
            signal("KILL", &all);
        }
        let at = Utc::now();
        let _ = child.start_kill();
        let _ = child.wait().await;
        (runs, at)
    }
}

fn port_of(base: &str) -> Option<u16> {
    base.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
}

fn signal(sig: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let _ = std::process::Command::new("kill")
        .arg(format!("-{sig}"))
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

/// Every process below `root`, by parent links in /proc (agents run in
/// process groups of their own, so the group alone would miss them).
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some(ppid) = stat_fields(pid).and_then(|f| f.get(1)?.parse::<u32>().ok()) {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// The fields of /proc/<pid>/stat after the parenthesised command name,
/// which may hold spaces: state first, then ppid.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// utime + stime of `pid`, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let f = stat_fields(pid)?;
    let tick = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    Some(tick(11)? + tick(12)?)
}

/// (VmRSS, VmHWM) in KiB.
fn rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn env_value(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    env.split(|b| *b == 0)
        .find(|e| e.starts_with(prefix.as_bytes()))
        .map(|e| String::from_utf8_lossy(&e[prefix.len()..]).into_owned())
}

pub fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}
