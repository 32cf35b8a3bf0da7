//! `paperclip-bench heartbeat`: the heartbeat machinery seen from outside.
//!
//! - **spawn**: assignment-to-process-spawn latency. A `process` agent whose
//!   script writes `date +%s%N` to a file named after `$PAPERCLIP_RUN_ID`;
//!   the latency is that timestamp minus the wall clock read just before the
//!   `POST .../issues` that assigns it. It includes the fork+exec of `sh` and
//!   of `date`, so the same script is also spawned straight from this process
//!   as a floor.
//! - **timers**: many process agents (`true`) on interval timers; the
//!   server's CPU time over a window from `/proc/<pid>/stat`, with the timers
//!   on and again after every timer is disabled.
//! - **fanout**: WebSocket subscribers to a company's live events while an
//!   issue title is PATCHed; per subscriber, the delivery latency of each
//!   `issue.updated` event and how many never arrived.
//!
//! Each part runs on its own fresh server. Figures only, no assertions.

mod fanout;
mod timers;

use fanout::*;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
pub(crate) use timers::cpu_ticks;
use timers::*;

use anyhow::{bail, Context};
use clap::ValueEnum;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::server::Server;

#[derive(clap::Args)]
pub struct HeartbeatArgs {
    /// Parts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "spawn,timers,fanout")]
    only: Vec<Part>,
    /// Timed assignment wakes, one after another.
    #[arg(long, default_value_t = 200)]
    spawns: usize,
    /// Untimed assignment wakes before them.
    #[arg(long, default_value_t = 10)]
    spawn_warmup: usize,
    /// Process agents on timers.
    #[arg(long, default_value_t = 200)]
    timer_agents: usize,
    /// Their `intervalSec` (the server's minimum is 30).
    #[arg(long, default_value_t = 30)]
    timer_interval_secs: u64,
    /// Wait after creating the timer agents before measuring.
    #[arg(long, default_value_t = 40)]
    timer_settle_secs: u64,
    /// CPU window with the timers on.
    #[arg(long, default_value_t = 60)]
    timer_window_secs: u64,
    /// CPU window after every timer is disabled.
    #[arg(long, default_value_t = 30)]
    idle_window_secs: u64,
    /// WebSocket subscribers.
    #[arg(long, default_value_t = 100)]
    subscribers: usize,
    /// Title PATCHes; each yields `issue.updated` and `activity.appended`.
    #[arg(long, default_value_t = 500)]
    patches: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Part {
    Spawn,
    Timers,
    Fanout,
}

pub async fn run(binary: &Path, db: Option<&str>, args: &HeartbeatArgs) -> anyhow::Result<()> {
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let mut backend = String::from("?");
    let mut spawn = None;
    let mut timers = None;
    let mut fanout = None;
    for part in [Part::Spawn, Part::Timers, Part::Fanout] {
        if !args.only.contains(&part) {
            continue;
        }
        let server = Server::start(binary, db).await?;
        let health: Value = client
            .get(server.url("/api/health"))
            .send()
            .await?
            .json()
            .await?;
        backend = health["database"]["backend"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        let result = match part {
            Part::Spawn => bench_spawn(&client, &server, args)
                .await
                .map(|r| spawn = Some(r)),
            Part::Timers => bench_timers(&client, &server, args)
                .await
                .map(|r| timers = Some(r)),
            Part::Fanout => bench_fanout(&client, &server, args)
                .await
                .map(|r| fanout = Some(r)),
        };
        server.stop().await;
        result?;
    }
    let report = Report {
        backend,
        spawn,
        timers,
        fanout,
    };
    report.print_summary();
    println!();
    report.print_markdown();
    Ok(())
}

// ---------------------------------------------------------------- helpers

/// Milliseconds, sorted ascending.
#[derive(Default)]
struct Dist(Vec<f64>);

impl Dist {
    fn push(&mut self, ms: f64) {
        self.0.push(ms);
    }

    fn finish(mut self) -> Dist {
        self.0.sort_by(f64::total_cmp);
        self
    }

    /// Nearest-rank percentile, `p` in 0..=100.
    fn pct(&self, p: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let rank = (p / 100.0 * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    fn max(&self) -> f64 {
        self.0.last().copied().unwrap_or(f64::NAN)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// `p50 / p95 / max ms`.
    fn show(&self) -> String {
        format!(
            "p50 {:.2} / p95 {:.2} / max {:.2} ms",
            self.pct(50.0),
            self.pct(95.0),
            self.max()
        )
    }
}

fn wall_nanos() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as i128
}

fn rfc3339_nanos(v: &Value) -> Option<i128> {
    let t = chrono::DateTime::parse_from_rfc3339(v.as_str()?).ok()?;
    Some(i128::from(t.timestamp_nanos_opt()?))
}

fn ms_between(from_nanos: i128, to_nanos: i128) -> f64 {
    (to_nanos - from_nanos) as f64 / 1e6
}

fn temp_dir(what: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("paperclip-bench-{what}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Sends `req` and returns the JSON body if the status is `want`.
async fn expect_json(req: reqwest::RequestBuilder, want: StatusCode) -> anyhow::Result<Value> {
    let resp = req.send().await?;
    let status = resp.status();
    let body = resp.bytes().await?;
    if status != want {
        bail!("{status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body)?)
}

fn id_of(v: &Value) -> anyhow::Result<String> {
    Ok(v["id"].as_str().context("response without id")?.to_string())
}

async fn create_agent(
    client: &reqwest::Client,
    server: &Server,
    company: &str,
    body: Value,
) -> anyhow::Result<String> {
    let url = server.url(&format!("/api/companies/{company}/agents"));
    let agent = expect_json(client.post(url).json(&body), StatusCode::CREATED)
        .await
        .context("creating an agent")?;
    id_of(&agent)
}

// ------------------------------------------------------------------ spawn

/// The agent's script: one nanosecond timestamp in a file named after the run.
const MARKER_SCRIPT: &str = r#"date +%s%N > "$MARKER_DIR/$PAPERCLIP_RUN_ID""#;

struct Spawn {
    /// `POST .../issues` sent -> timestamp written by the agent's `date`.
    pub(crate) e2e: Dist,
    /// The POST's own round trip.
    pub(crate) post: Dist,
    /// POST sent -> the run's `createdAt` (millisecond precision).
    pub(crate) to_created: Dist,
    /// `createdAt` -> `startedAt` (millisecond precision).
    pub(crate) created_to_started: Dist,
    /// `startedAt` -> timestamp written by `date`.
    pub(crate) started_to_marker: Dist,
    /// The same script spawned by this process (tokio::process), no server.
    pub(crate) direct: Dist,
    /// Terminal statuses of the timed runs.
    pub(crate) statuses: BTreeMap<String, usize>,
}

async fn bench_spawn(
    client: &reqwest::Client,
    server: &Server,
    args: &HeartbeatArgs,
) -> anyhow::Result<Spawn> {
    let markers = temp_dir("markers")?;
    let company = crate::create_company(client, server, "Spawn Co").await?;
    let agent = create_agent(
        client,
        server,
        &company,
        json!({
            "name": "Spawner",
            "adapterType": "process",
            "adapterConfig": {
                "command": "sh",
                "args": ["-c", MARKER_SCRIPT],
                "env": { "MARKER_DIR": markers.display().to_string() },
            },
            "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 50 } },
        }),
    )
    .await?;
    let issues_url = server.url(&format!("/api/companies/{company}/issues"));
    eprintln!(
        "spawn: {} + {} warm-up assignment wakes, one at a time...",
        args.spawns, args.spawn_warmup
    );
    let mut seen = HashSet::new();
    let (mut e2e, mut post, mut to_created) = (Dist::default(), Dist::default(), Dist::default());
    let (mut created_to_started, mut started_to_marker) = (Dist::default(), Dist::default());
    let mut statuses = BTreeMap::new();
    for i in 0..args.spawn_warmup + args.spawns {
        let t0 = wall_nanos();
        let sent = Instant::now();
        let issue = expect_json(
            client.post(&issues_url).json(&json!({
                "title": format!("spawn {i}"),
                "status": "todo",
                "assigneeAgentId": agent,
            })),
            StatusCode::CREATED,
        )
        .await
        .context("creating an assigned issue")?;
        let post_ms = sent.elapsed().as_secs_f64() * 1000.0;
        let issue_id = id_of(&issue)?;
        let (run_id, marker) = wait_marker(&markers, &mut seen, Duration::from_secs(60))
            .await
            .with_context(|| format!("wake {i}: no marker"))?;
        let run = wait_run(client, server, &run_id).await?;
        if run["issueId"].as_str() != Some(issue_id.as_str()) {
            bail!("run {run_id} is not the run of issue {issue_id}: {run}");
        }
        if i < args.spawn_warmup {
            continue;
        }
        e2e.push(ms_between(t0, marker));
        post.push(post_ms);
        let created = rfc3339_nanos(&run["createdAt"]).context("run without createdAt")?;
        let started = rfc3339_nanos(&run["startedAt"]).context("run without startedAt")?;
        to_created.push(ms_between(t0, created));
        created_to_started.push(ms_between(created, started));
        started_to_marker.push(ms_between(started, marker));
        *statuses
            .entry(run["status"].as_str().unwrap_or("?").to_string())
            .or_insert(0) += 1;
    }

    eprintln!(
        "spawn: the same script {} times without the server...",
        args.spawns
    );
    let mut direct = Dist::default();
    for i in 0..args.spawn_warmup + args.spawns {
        let name = format!("direct-{i}");
        let t0 = wall_nanos();
        let status = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(MARKER_SCRIPT)
            .env("MARKER_DIR", &markers)
            .env("PAPERCLIP_RUN_ID", &name)
            .status()
            .await?;
        if !status.success() {
            bail!("sh -c {MARKER_SCRIPT:?}: {status}");
        }
        let marker = read_marker(&markers.join(&name))?.context("direct marker empty")?;
        if i >= args.spawn_warmup {
            direct.push(ms_between(t0, marker));
        }
    }
    let _ = std::fs::remove_dir_all(&markers);
    Ok(Spawn {
        e2e: e2e.finish(),
        post: post.finish(),
        to_created: to_created.finish(),
        created_to_started: created_to_started.finish(),
        started_to_marker: started_to_marker.finish(),
        direct: direct.finish(),
        statuses,
    })
}

/// A complete marker (`date` output ends with a newline), if written yet.
fn read_marker(path: &Path) -> anyhow::Result<Option<i128>> {
    let text = std::fs::read_to_string(path)?;
    if !text.ends_with('\n') {
        return Ok(None);
    }
    Ok(Some(text.trim().parse().with_context(|| {
        format!("marker {} is not a number: {text:?}", path.display())
    })?))
}

/// Polls the directory (not the server, so the wait adds no load to it) for
/// the next new, complete marker; returns its name (the run id) and content.
async fn wait_marker(
    dir: &Path,
    seen: &mut HashSet<String>,
    timeout: Duration,
) -> anyhow::Result<(String, i128)> {
    let deadline = Instant::now() + timeout;
    loop {
        for entry in std::fs::read_dir(dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if seen.contains(&name) {
                continue;
            }
            if let Some(nanos) = read_marker(&dir.join(&name))? {
                seen.insert(name.clone());
                return Ok((name, nanos));
            }
        }
        if Instant::now() > deadline {
            bail!("no new marker in {} within {timeout:?}", dir.display());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Polls the run until it is neither queued nor running.
async fn wait_run(
    client: &reqwest::Client,
    server: &Server,
    run_id: &str,
) -> anyhow::Result<Value> {
    let url = server.url(&format!("/api/heartbeat-runs/{run_id}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = expect_json(client.get(&url), StatusCode::OK).await?;
        if !matches!(run["status"].as_str(), Some("queued" | "running")) {
            return Ok(run);
        }
        if Instant::now() > deadline {
            bail!("run {run_id} still {} after 60 s", run["status"]);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

// ----------------------------------------------------------------- timers

struct Report {
    pub(crate) backend: String,
    pub(crate) spawn: Option<Spawn>,
    pub(crate) timers: Option<Timers>,
    pub(crate) fanout: Option<Fanout>,
}

fn statuses(map: &BTreeMap<String, usize>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(s, n)| format!("{n} {s}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Report {
    fn print_summary(&self) {
        println!("paperclip-bench heartbeat ({} backend)", self.backend);
        if let Some(s) = &self.spawn {
            println!("  assignment -> spawn ({} wakes)", s.e2e.len());
            println!("    POST sent -> date   {}", s.e2e.show());
            println!("    POST round trip     {}", s.post.show());
            println!("    POST -> createdAt   {}", s.to_created.show());
            println!("    created -> started  {}", s.created_to_started.show());
            println!("    started -> date     {}", s.started_to_marker.show());
            println!("    sh+date, no server  {}", s.direct.show());
            println!("    run statuses        {}", statuses(&s.statuses));
        }
        if let Some(t) = &self.timers {
            println!(
                "  {} agents on {} s timers (CLK_TCK {})",
                t.agents, t.interval_secs, t.clk_tck
            );
            for (label, w) in [("timers on ", &t.on), ("timers off", &t.off)] {
                println!(
                    "    {label}  {:.0} s: server {:.2} % of a core ({} ticks, {} system), \
                     reaped children {:.2} % ({} ticks); {} runs ({}) by {} agents; {} runs before",
                    w.secs,
                    w.pct(w.self_ticks, t.clk_tck),
                    w.self_ticks,
                    w.self_sys_ticks,
                    w.pct(w.child_ticks, t.clk_tck),
                    w.child_ticks,
                    w.runs_total(),
                    statuses(&w.runs),
                    w.agents_woken,
                    w.earlier
                );
            }
        }
        if let Some(f) = &self.fanout {
            println!(
                "  fan-out: {} PATCHes to {} subscribers ({:.0} PATCH/s, PATCH {})",
                f.patches,
                f.subscribers,
                f.patches as f64 / f.patch_secs,
                f.patch.show()
            );
            println!("    each delivery       {}", f.delivery.show());
            println!("    to all subscribers  {}", f.to_all.show());
            println!(
                "    missing             {} of {} issue.updated deliveries; \
                 {} frames read ({} activity.appended)",
                f.missing,
                f.patches * f.subscribers,
                f.frames,
                f.activity_frames
            );
        }
    }

    fn print_markdown(&self) {
        let d = |d: &Dist| {
            format!(
                "p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
                d.pct(50.0),
                d.pct(95.0),
                d.max()
            )
        };
        println!("| Metric ({}) | Target | Result |", self.backend);
        println!("|---|---|---|");
        if let Some(s) = &self.spawn {
            println!(
                "| Assignment -> spawn (POST sent -> `date` in the agent), {} wakes | p95 <= 25 ms (upstream ~1 s) | {} |",
                s.e2e.len(),
                d(&s.e2e)
            );
            println!("| - POST round trip | - | {} |", d(&s.post));
            println!(
                "| - run `startedAt` -> `date` | - | {} |",
                d(&s.started_to_marker)
            );
            println!(
                "| `sh -c date` spawned by the bench (floor) | - | {} |",
                d(&s.direct)
            );
        }
        if let Some(t) = &self.timers {
            for (label, w, target) in [
                ("timers on", &t.on, "< 1 %"),
                ("timers disabled", &t.off, "-"),
            ] {
                println!(
                    "| {} agents, {} s timers, {label}: server CPU over {:.0} s | {target} | {:.2} % of a core (+ {:.2} % in reaped children); {} runs |",
                    t.agents,
                    t.interval_secs,
                    w.secs,
                    w.pct(w.self_ticks, t.clk_tck),
                    w.pct(w.child_ticks, t.clk_tck),
                    w.runs_total()
                );
            }
        }
        if let Some(f) = &self.fanout {
            println!(
                "| Fan-out, {} subscribers, {} `issue.updated`: each delivery | - | {} |",
                f.subscribers,
                f.patches,
                d(&f.delivery)
            );
            println!(
                "| - until the last subscriber has it | - | {} |",
                d(&f.to_all)
            );
            println!(
                "| - missing deliveries | 0 | {} of {} |",
                f.missing,
                f.patches * f.subscribers
            );
        }
    }
}
