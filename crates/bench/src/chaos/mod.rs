//! Chaos for the run engine: script agents working tasks while the board
//! wakes, assigns, comments, @mentions, cancels, pauses, stops budgets, and
//! the server is SIGKILLed and restarted every few seconds. Afterwards the
//! invariants are checked from the database and the agents' own logs
//! (`check.rs`). One driver for the test (`tests/chaos.rs`, short) and for
//! `paperclip-bench chaos` (long).

pub(crate) mod agents;
pub(crate) mod check;
mod comments;
mod data;
pub(crate) mod driver;
pub(crate) mod proc;

/// The database as the checks read it; the fleet bench reads it too.
pub(crate) use data::Db;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use tokio::sync::Mutex;

use driver::{Api, Counters, Driver};
use proc::ServerProc;

pub struct Config {
    /// The `paperclip` binary.
    pub binary: PathBuf,
    /// The server's database; SQLite in its data dir without it. Checks are
    /// scoped to the run's own company, so a shared database is fine.
    pub database_url: Option<String>,
    /// How long the chaos lasts, before the drain.
    pub secs: u64,
    pub seed: u64,
    pub agents: usize,
    /// A restart every this long, a random span between the two.
    pub restart_every: (Duration, Duration),
    /// Pace of the board's actions.
    pub action_every: Duration,
    /// Deadline for the queue to empty once the chaos stops.
    pub drain_secs: u64,
}

impl Config {
    /// `PAPERCLIP_CHAOS_SEED` if set, else one from the clock.
    pub fn seed_from_env() -> u64 {
        std::env::var("PAPERCLIP_CHAOS_SEED")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            })
    }
}

#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub engine: String,
    pub chaos_secs: f64,
    pub drain_secs: f64,
    pub rounds: u64,
    pub restarts: u64,
    pub cancels: u64,
    pub pauses: u64,
    pub budget_stops: u64,
    pub figures: check::Figures,
    pub violations: Vec<String>,
    /// Kept when there are violations: server.log, the agents' logs, SQLite.
    pub data_dir: PathBuf,
}

impl Report {
    pub fn summary(&self) -> String {
        let f = &self.figures;
        format!(
            "chaos seed={} engine={} chaos={:.0}s drain={:.1}s rounds={} restarts={} cancels={} \
             pauses={} budget_stops={} wakes={} runs={} started={} killed_by_restart={} \
             comments={} deliveries={} dropped_by_stop={} peak_parallel={} stale_checkouts={} violations={}",
            self.seed, self.engine, self.chaos_secs, self.drain_secs, self.rounds, self.restarts,
            self.cancels, self.pauses, self.budget_stops, f.wakes, f.runs, f.started_runs,
            f.killed_by_restart, f.comments, f.deliveries, f.dropped_by_stop, f.peak_parallel,
            f.stale_checkouts, self.violations.len()
        )
    }

    pub fn markdown(&self) -> String {
        let f = &self.figures;
        format!(
            "| {} | {} | {:.0} s | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            self.engine,
            self.seed,
            self.chaos_secs,
            self.rounds,
            self.restarts,
            f.wakes,
            f.runs,
            f.killed_by_restart,
            f.comments,
            f.deliveries,
            f.stale_checkouts,
            self.violations.len()
        )
    }

    /// How many findings per invariant, e.g. `invariant 1: 6, invariant 5: 10`.
    pub fn by_invariant(&self) -> String {
        let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
        for v in &self.violations {
            let key = v.split([':', '(']).next().unwrap_or(v).trim();
            *counts.entry(key).or_default() += 1;
        }
        let parts: Vec<String> = counts.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        parts.join(", ")
    }

    pub const MARKDOWN_HEADER: &'static str = "| engine | seed | chaos | rounds | restarts | wakes | runs | killed by restart | comments | deliveries | stale checkouts | violations |\n|---|---|---|---|---|---|---|---|---|---|---|---|";
}

pub async fn run(config: &Config) -> anyhow::Result<Report> {
    eprintln!(
        "chaos: seed {} (PAPERCLIP_CHAOS_SEED={0} repeats it)",
        config.seed
    );
    let mut rng = Rng(config.seed);
    let data_dir = std::env::temp_dir().join(format!("paperclip-chaos-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(data_dir.join("agent-logs"))?;
    let server =
        ServerProc::start(&config.binary, &data_dir, config.database_url.as_deref()).await?;
    let api = Api::new(&server.base);
    let server = Arc::new(Mutex::new(server));
    let counters = Arc::new(Counters::default());

    let cid = api
        .ok("POST", "/api/companies", json!({ "name": "Chaos Co" }))
        .await
        .context("creating the company")?["id"]
        .as_str()
        .context("company id")?
        .to_string();
    let agents = create_agents(&api, &cid, &data_dir, config.agents, &mut rng).await?;
    let mut driver = Driver::new(api.clone(), cid.clone(), agents, counters.clone());

    let stop = Arc::new(AtomicBool::new(false));
    let killer = tokio::spawn(driver::killer(
        server.clone(),
        api.clone(),
        counters.clone(),
        stop.clone(),
        config.restart_every,
        Rng(rng.next()),
    ));
    let started = Instant::now();
    let mut pace = tokio::time::interval(config.action_every);
    while started.elapsed() < Duration::from_secs(config.secs) && !killer.is_finished() {
        pace.tick().await;
        driver.step(&mut rng).await;
    }
    stop.store(true, Ordering::Relaxed);
    killer.await?.context("restarting the server")?;
    driver.join_background().await;
    let chaos_secs = started.elapsed().as_secs_f64();

    let db = data::Db::connect(config.database_url.as_deref(), &data_dir, &cid).await?;
    let drained = Instant::now();
    let mut violations = Vec::new();
    if crate::poll::until(config.drain_secs, async || db.drained().await.then_some(()))
        .await
        .is_none()
    {
        violations.push(format!(
            "the queue did not drain within {} s",
            config.drain_secs
        ));
    }
    let drain_secs = drained.elapsed().as_secs_f64();
    let engine = api
        .call("GET", "/api/health", None)
        .await
        .and_then(|(_, v)| v["database"]["backend"].as_str().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    server.lock().await.kill9().await;

    let (figures, found) = check::all(&db, &driver.agents, &driver.acked, &data_dir).await?;
    violations.extend(found);
    db.close().await;
    if violations.is_empty() {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    Ok(Report {
        seed: config.seed,
        engine,
        chaos_secs,
        drain_secs,
        rounds: counters.rounds.load(Ordering::Relaxed),
        restarts: counters.restarts.load(Ordering::Relaxed),
        cancels: counters.cancels.load(Ordering::Relaxed),
        pauses: counters.pauses.load(Ordering::Relaxed),
        budget_stops: counters.budget_stops.load(Ordering::Relaxed),
        figures,
        violations,
        data_dir,
    })
}

/// Agents `c0`, `c1`, ...; some may run several runs at once.
async fn create_agents(
    api: &Api,
    cid: &str,
    data_dir: &Path,
    n: usize,
    rng: &mut Rng,
) -> anyhow::Result<Vec<driver::Agent>> {
    let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let mut agents = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let peers: Vec<String> = names.iter().filter(|p| *p != name).cloned().collect();
        let log = agent_log(data_dir, name);
        let script_path = data_dir.join(format!("{name}.sh"));
        std::fs::write(&script_path, agents::script(name, &log, &peers))?;
        let max_concurrent = if i % 3 == 0 {
            2 + rng.below(2) as u32
        } else {
            1
        };
        let body = json!({
            "name": name, "adapterType": "process",
            "adapterConfig": { "command": "sh", "args": [script_path], "graceSec": 1 },
            "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": max_concurrent } },
        });
        let agent = api
            .ok("POST", &format!("/api/companies/{cid}/agents"), body)
            .await
            .with_context(|| format!("creating agent {name}"))?;
        agents.push(driver::Agent {
            id: agent["id"].as_str().context("agent id")?.to_string(),
            name: name.clone(),
            max_concurrent,
        });
    }
    Ok(agents)
}

fn agent_log(data_dir: &Path, name: &str) -> PathBuf {
    data_dir.join("agent-logs").join(format!("{name}.log"))
}

/// SplitMix64: the seed must fix the sequence, and no crate is needed for it.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
