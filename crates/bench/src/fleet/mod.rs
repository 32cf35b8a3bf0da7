//! `paperclip-bench fleet`: a simulated 24-hour day of a company of 100
//! agents on two instances of the release binary sharing one Postgres
//! database, each with its own data dir; one instance is SIGKILLed with its
//! agents' processes every few minutes (in turn) and started again after a
//! while, as a lost host would be. Meanwhile the board acts on a seeded
//! plan (tasks, comments, @mentions, reassignments, approvals, budget
//! stops), routines fire on cron schedules and agents' hourly timers tick,
//! all on the test clock compressed into a few real minutes; and a load
//! client reads every board route through both instances.
//!
//! Afterwards, from the database and the agents' logs: runs lost,
//! duplicated, left running (the chaos invariants, plus runs whose process
//! finished its work but whose row says otherwise), model requests spent on
//! wakes with nothing to do, and how long each killed instance's runs took
//! to be settled (by the survivor, or by the instance's own restart).

mod agent;
mod check;
mod day;
mod instance;
mod probe;
mod report;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use paperclip_scripted_provider::{ScriptedProvider, Turn};

use day::{Board, Day, Slot};
use instance::Instance;
pub use report::Report;

#[derive(clap::Args, Clone, Debug)]
pub struct FleetArgs {
    /// Agents in the company.
    #[arg(long, default_value_t = 100)]
    pub agents: usize,
    /// Real minutes the simulated day is compressed into.
    #[arg(long, default_value_t = 10.0)]
    pub minutes: f64,
    /// The day's length in real seconds instead (a smoke run).
    #[arg(long)]
    pub secs: Option<u64>,
    /// One instance (in turn) is killed this often.
    #[arg(long, default_value_t = 120)]
    pub kill_every_secs: u64,
    /// How long a killed instance stays down: past the lease (30 s) and a
    /// sweep, the survivor must have taken its runs over.
    #[arg(long, default_value_t = 45)]
    pub down_secs: u64,
    /// Load client requests per second, per instance.
    #[arg(long, default_value_t = 20.0)]
    pub load_rps: f64,
    /// Deadline for the queue to empty once the day is over.
    #[arg(long, default_value_t = 180)]
    pub drain_secs: u64,
    /// Repeats a run's plan of actions.
    #[arg(long, default_value_t = 38)]
    pub seed: u64,
}

pub struct Config {
    pub binary: PathBuf,
    /// Required: two instances cannot share a SQLite file.
    pub database_url: String,
    pub args: FleetArgs,
}

/// A kill of one instance and what became of it.
#[derive(Debug, Clone)]
pub struct Kill {
    pub instance: String,
    pub at: DateTime<Utc>,
    pub restarted_at: Option<DateTime<Utc>>,
    /// Runs whose processes died with it.
    pub runs: Vec<String>,
}

pub async fn run(config: &Config) -> anyhow::Result<Report> {
    let a = &config.args;
    if a.agents < 2 {
        bail!("--agents must be at least 2 (agents @mention each other)");
    }
    let day_secs = a.secs.map_or(a.minutes * 60.0, |s| s as f64);
    let day_len = Duration::from_secs_f64(day_secs);
    let data_dir = std::env::temp_dir().join(format!("paperclip-fleet-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(data_dir.join("agent-logs"))?;
    eprintln!(
        "fleet: {} agents, a day in {day_secs:.0} s, a kill every {} s (down {} s), seed {}; evidence in {}",
        a.agents,
        a.kill_every_secs,
        a.down_secs,
        a.seed,
        data_dir.display()
    );
    let provider = ScriptedProvider::start(std::iter::empty::<Turn>()).await;
    // The day starts now on the hour, so the agents' real-time timestamps
    // (last heartbeat, creation) come before the test clock's.
    let start = {
        let now = Utc::now() + chrono::Duration::hours(1);
        now - chrono::Duration::seconds(now.timestamp() % 3600)
    };
    let mut instances = Vec::new();
    for name in ["a", "b"] {
        let dir = data_dir.join(format!("instance-{name}"));
        let inst = Instance::start(name, &config.binary, &dir, &config.database_url, start)
            .await
            .with_context(|| format!("starting instance {name}"))?;
        instances.push(inst);
    }
    let slots: day::Slots = Arc::new(
        instances
            .iter()
            .map(|i| Slot {
                base: std::sync::RwLock::new(i.base.clone()),
                up: AtomicBool::new(true),
            })
            .collect(),
    );
    let mut board = Board::new(slots.clone());
    let company = day::setup(&mut board, a.agents, &data_dir, &provider.base_url()).await?;
    let routes = probe::routes(&company);
    let mut rng = Rng(a.seed);
    let plan = day::plan(&mut rng, day_secs / 600.0);
    let mut day = Day::new(board, company);

    let stop = Arc::new(AtomicBool::new(false));
    let (results, probes) = probe::start(slots.clone(), routes.clone(), a.load_rps, stop.clone());
    let mut kills: Vec<Kill> = Vec::new();
    let mut down: Option<(usize, Instant)> = None;
    let kill_every = Duration::from_secs(a.kill_every_secs.max(1));
    let mut next_kill = Instant::now() + kill_every;
    let mut clock_at = Instant::now();
    let mut sampled = Instant::now();
    let mut step = 0;
    let began = Instant::now();
    let sim = |elapsed: Duration| {
        let f = (elapsed.as_secs_f64() / day_secs).min(1.0);
        start + chrono::Duration::milliseconds((f * 86_400_000.0) as i64)
    };
    eprintln!("fleet: the day begins ({} planned actions)", plan.len());
    // A day has at least one kill: on a loaded machine the day's own
    // requests can outlast it before the first kill is due (CI once ended a
    // 20 s day with none, and the test's "not vacuous" check failed).
    while began.elapsed() < day_len || kills.is_empty() {
        let now = Instant::now();
        if down.is_none() && now >= next_kill {
            let victim = kills.len() % instances.len();
            slots[victim].up.store(false, Ordering::SeqCst);
            let (runs, at) = instances[victim].kill9().await;
            eprintln!(
                "fleet: killed instance {} at {:.0} s with {} runs live",
                instances[victim].name,
                began.elapsed().as_secs_f64(),
                runs.len()
            );
            kills.push(Kill {
                instance: instances[victim].name.clone(),
                at,
                restarted_at: None,
                runs,
            });
            down = Some((victim, now));
            next_kill = now + kill_every;
        }
        if let Some((victim, since)) = down {
            if since.elapsed() >= Duration::from_secs(a.down_secs) {
                // Before the spawn: the restart's own recovery runs before
                // the instance says it is listening.
                kills.last_mut().unwrap().restarted_at = Some(Utc::now());
                restart(&mut instances[victim], &slots[victim], sim(began.elapsed())).await?;
                down = None;
            }
        }
        if clock_at.elapsed() >= Duration::from_secs(1) {
            clock_at = Instant::now();
            set_clocks(&mut day.board, &slots, sim(began.elapsed())).await;
        }
        if sampled.elapsed() >= Duration::from_secs(2) {
            sampled = Instant::now();
            instances.iter_mut().for_each(Instance::sample);
        }
        let f = began.elapsed().as_secs_f64() / day_secs;
        while step < plan.len() && plan[step].0 <= f {
            day.act(plan[step].1, &mut rng).await;
            step += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The rest of the plan (a lift or a decision past the end) and the
    // clock at the day's end.
    while step < plan.len() {
        day.act(plan[step].1, &mut rng).await;
        step += 1;
    }
    eprintln!("fleet: the day is over; draining");
    if let Some((victim, _)) = down.take() {
        kills.last_mut().unwrap().restarted_at = Some(Utc::now());
        restart(&mut instances[victim], &slots[victim], sim(day_len)).await?;
    }
    set_clocks(&mut day.board, &slots, sim(day_len)).await;
    day.lift_all().await;
    stop.store(true, Ordering::Relaxed);
    for p in probes {
        let _ = p.await;
    }
    let day_wall = began.elapsed();

    let db =
        crate::chaos::Db::connect(Some(&config.database_url), &data_dir, &day.company.id).await?;
    let drain_started = Instant::now();
    let drained = crate::poll::until(a.drain_secs, async || db.drained().await.then_some(()))
        .await
        .is_some();
    let drain = drain_started.elapsed();
    for inst in &mut instances {
        inst.sample();
    }
    let usage: Vec<_> = instances.iter().map(Instance::usage).collect();
    for (i, inst) in instances.iter_mut().enumerate() {
        slots[i].up.store(false, Ordering::SeqCst);
        inst.kill9().await;
    }
    let figures = check::figures(&db, &day, &data_dir, &kills, &provider).await?;
    db.close().await;
    let mut results = std::mem::take(&mut *results.lock().unwrap());
    let report = Report {
        agents: a.agents,
        seed: a.seed,
        day_wall,
        drain,
        drained,
        kills,
        routes: routes
            .iter()
            .map(|(label, _)| (label.clone(), results.remove(label).unwrap_or_default()))
            .collect(),
        instances: instances
            .iter()
            .zip(usage)
            .map(|(i, u)| report::InstanceFigures::of(i, u))
            .collect(),
        done: std::mem::take(&mut day.done),
        routines: day.company.routines,
        unanswered: day.board.unanswered,
        figures,
        data_dir: data_dir.clone(),
    };
    if report.clean() {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    Ok(report)
}

async fn restart(inst: &mut Instance, slot: &Slot, at: DateTime<Utc>) -> anyhow::Result<()> {
    inst.restart(at)
        .await
        .with_context(|| format!("restarting instance {}", inst.name))?;
    *slot.base.write().unwrap() = inst.base.clone();
    slot.up.store(true, Ordering::SeqCst);
    eprintln!("fleet: instance {} is back", inst.name);
    Ok(())
}

/// Moves the test clock of every instance that is up; each runs a routine
/// pass and a timer pass at the new time (the database makes a tick fire
/// once across instances).
async fn set_clocks(board: &mut Board, slots: &day::Slots, at: DateTime<Utc>) {
    let client = reqwest::Client::new();
    for slot in slots.iter() {
        if !slot.up.load(Ordering::SeqCst) {
            continue;
        }
        let url = format!("{}/api/instance/test-clock", slot.base.read().unwrap());
        let answer = client
            .post(url)
            .json(&serde_json::json!({ "now": at.to_rfc3339() }))
            .timeout(Duration::from_secs(30))
            .send()
            .await;
        if !answer.is_ok_and(|r| r.status().is_success()) {
            board.unanswered += 1;
        }
    }
}

/// SplitMix64: the seed fixes the plan, and no crate is needed for it.
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

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}
