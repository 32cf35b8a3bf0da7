//! `paperclip-bench scale`: a very large company, built quickly, and every
//! board page and API route the board uses measured at that size.
//!
//! Build: the company, goals, projects, labels and agents (an org chart) go
//! through the API (`seed.rs`); then the server is stopped and the bulk —
//! tasks, labels, blockers, comments, finished runs, cost events, activity —
//! is written with set-based SQL (`bulk.rs`); the server is started again on
//! the same data, so migrations and restart recovery see it, and today's work
//! (a task with subtasks, a conversation, a real run, approvals) goes through
//! the API. Then a few checks that the bulk is what the app would have made,
//! and the measure phase (`measure.rs`). Shared by the binary and, tiny, by
//! `tests/scale_smoke.rs`.

mod bulk;
pub mod measure;
mod seed;
mod sql;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use sqlx::Connection;

use crate::chaos::proc::ServerProc;
pub use measure::Row;
use seed::Api;

pub struct Config {
    pub binary: PathBuf,
    /// Postgres; SQLite in the data dir without it.
    pub database_url: Option<String>,
    /// Kept afterwards when given (the built company can be measured again);
    /// a temp dir, removed, otherwise.
    pub data_dir: Option<PathBuf>,
    pub issues: u64,
    pub agents: usize,
    pub comments_per_issue: f64,
    /// Finished runs over the last 14 days, each with a cost event when it
    /// got far enough to spend; `None`: one per 10 tasks.
    pub runs: Option<u64>,
    /// Timed requests per route.
    pub requests: usize,
}

#[derive(Debug, Default)]
pub struct Counts {
    pub issues: i64,
    pub comments: i64,
    pub runs: i64,
    pub cost_events: i64,
    pub activity: i64,
    pub agents: i64,
}

pub struct Report {
    pub engine: String,
    pub prefix: String,
    pub issues: u64,
    pub agents: usize,
    pub api_seed_secs: f64,
    pub bulk: Vec<(String, u64, f64)>,
    pub restart_secs: f64,
    pub build_secs: f64,
    pub db: Counts,
    /// Through the API: the dashboard's task total, the tasks listed page by
    /// page (all of them, or only `listed_filter`'s for big companies).
    pub dashboard_total: i64,
    pub listed: i64,
    pub listed_filter: String,
    pub listed_expected: i64,
    pub new_identifier: String,
    pub problems: Vec<String>,
    pub rows: Vec<Row>,
    pub rss_kib: (u64, u64),
    pub data_dir: PathBuf,
}

/// Up to this many tasks the check lists every task through the API.
const LIST_ALL_UP_TO: u64 = 100_000;
/// Tasks created through the API after the bulk (see `seed::today`).
const TODAY_TASKS: i64 = 5;

pub async fn run(config: &Config) -> anyhow::Result<Report> {
    sqlx::any::install_default_drivers();
    let keep = config.data_dir.is_some();
    let data_dir = config.data_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("paperclip-scale-{}", uuid::Uuid::new_v4()))
    });
    std::fs::create_dir_all(&data_dir)?;
    let db_url = config
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("paperclip.db").display()));
    let build_started = Instant::now();
    let mut server =
        ServerProc::start(&config.binary, &data_dir, config.database_url.as_deref()).await?;
    let api = Api::new(&server.base)?;
    eprintln!(
        "scale: company and {} agents through the API...",
        config.agents
    );
    let seed = seed::company(&api, config.agents).await?;
    let api_seed_secs = build_started.elapsed().as_secs_f64();
    // Every API write was acknowledged, so committed: a kill loses nothing.
    server.kill9().await;

    let plan = bulk::Plan {
        issues: config.issues,
        comments: (config.issues as f64 * config.comments_per_issue).round() as u64,
        runs: config.runs.unwrap_or(config.issues / 10).max(1),
        now_ms: chrono::Utc::now().timestamp_millis(),
    };
    eprintln!(
        "scale: bulk of {} tasks, {} comments, {} runs...",
        plan.issues, plan.comments, plan.runs
    );
    let bulk = bulk::fill(&db_url, &seed, &plan).await?;
    let restarted = Instant::now();
    server.restart().await?;
    let restart_secs = restarted.elapsed().as_secs_f64();
    let build_secs = build_started.elapsed().as_secs_f64();
    eprintln!("scale: built in {build_secs:.1} s (restart {restart_secs:.1} s)");

    let api = Api::new(&server.base)?;
    let mut problems = Vec::new();
    let base = 0; // no task exists before the bulk
    for k in [1, plan.issues / 3, plan.issues / 2 + 1, plan.issues]
        .into_iter()
        .filter(|k| *k >= 1)
    {
        let ident = format!("{}-{}", seed.prefix, base + k);
        match api.get(&format!("/api/issues/{ident}")).await {
            Ok(v) if v["identifier"] == ident.as_str() => {}
            Ok(v) => problems.push(format!(
                "GET /api/issues/{ident} answered {}",
                v["identifier"]
            )),
            Err(e) => problems.push(format!("{e:#}")),
        }
    }
    let today = seed::today(&api, &seed).await?;
    let want = format!("{}-{}", seed.prefix, base + plan.issues + 1);
    if today.new_identifier != want {
        problems.push(format!(
            "a task created after the bulk got {}, not {want}",
            today.new_identifier
        ));
    }

    let db = counts(&db_url, &seed.company_id).await?;
    if db.issues != plan.issues as i64 + TODAY_TASKS {
        problems.push(format!(
            "{} tasks in the database, expected {}",
            db.issues,
            plan.issues as i64 + TODAY_TASKS
        ));
    }
    let dash = api
        .get(&format!("/api/companies/{}/dashboard", seed.company_id))
        .await?;
    let dashboard_total = dash["tasks"]["total"].as_i64().unwrap_or(-1);
    if dashboard_total != db.issues {
        problems.push(format!(
            "dashboard says {dashboard_total} tasks, the database {}",
            db.issues
        ));
    }
    let (listed_filter, listed_expected) = if plan.issues <= LIST_ALL_UP_TO {
        (String::new(), db.issues)
    } else {
        (
            "status=in_review".to_string(),
            dash["tasks"]["byStatus"]["in_review"]
                .as_i64()
                .unwrap_or(-1),
        )
    };
    let listed = list_count(&api, &seed.company_id, &listed_filter).await?;
    if listed != listed_expected {
        problems.push(format!(
            "listed {listed} tasks ({listed_filter}), expected {listed_expected}"
        ));
    }

    eprintln!("scale: measuring {} requests per route...", config.requests);
    let sample = format!("{}-{}", seed.prefix, base + (plan.issues * 2 / 3).max(1));
    let mut rows = Vec::new();
    for (kind, path) in measure::paths(&seed, &today, &sample, seed.agents.len() / 2) {
        let row = measure::route(&api, kind, &path, config.requests).await;
        eprintln!(
            "  {} {path}: p50 {:.1} ms{}",
            kind,
            row.p50_ms,
            row.error
                .as_deref()
                .map(|e| format!(" ERROR {e}"))
                .unwrap_or_default()
        );
        rows.push(row);
    }
    let rss_kib = rss(server.pid().context("server pid")?)?;
    let engine = api.get("/api/health").await?["database"]["backend"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    server.kill9().await;
    if !keep {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    Ok(Report {
        engine,
        prefix: seed.prefix,
        issues: plan.issues,
        agents: seed.agents.len(),
        api_seed_secs,
        bulk,
        restart_secs,
        build_secs,
        db,
        dashboard_total,
        listed,
        listed_filter,
        listed_expected,
        new_identifier: today.new_identifier,
        problems,
        rows,
        rss_kib,
        data_dir,
    })
}

async fn counts(url: &str, cid: &str) -> anyhow::Result<Counts> {
    let mut conn = sqlx::AnyConnection::connect(url).await?;
    let mut n = async |table: &str| -> anyhow::Result<i64> {
        Ok(sqlx::query_scalar::<_, i64>(&format!(
            "SELECT COUNT(*) FROM {table} WHERE company_id = '{cid}'"
        ))
        .fetch_one(&mut conn)
        .await?)
    };
    let c = Counts {
        issues: n("issues").await?,
        comments: n("issue_comments").await?,
        runs: n("heartbeat_runs").await?,
        cost_events: n("cost_events").await?,
        activity: n("activity_log").await?,
        agents: n("agents").await?,
    };
    conn.close().await?;
    Ok(c)
}

/// Pages through the task list with its cursor, as a client would.
async fn list_count(api: &Api, cid: &str, filter: &str) -> anyhow::Result<i64> {
    let mut total = 0;
    let mut cursor = String::new();
    loop {
        let url = format!(
            "{}/api/companies/{cid}/issues?limit=5000&{filter}{cursor}",
            api.base
        );
        let resp = api.client.get(&url).send().await?.error_for_status()?;
        let next = resp
            .headers()
            .get("x-next-cursor")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let page: serde_json::Value = resp.json().await?;
        total += page.as_array().map_or(0, |a| a.len() as i64);
        match next {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return Ok(total),
        }
    }
}

fn rss(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut s = format!(
            "### {} — {} tasks, {} agents\n\nBuild: {:.1} s in all (API seed {:.1} s, restart on the built data {:.1} s).\n\n| Bulk step | Rows | Time |\n|---|---|---|\n",
            self.engine, self.issues, self.agents, self.build_secs, self.api_seed_secs, self.restart_secs);
        for (name, rows, secs) in &self.bulk {
            s.push_str(&format!("| {name} | {rows} | {secs:.1} s |\n"));
        }
        let d = &self.db;
        s.push_str(&format!(
            "\nIn the database: {} tasks, {} comments, {} runs, {} cost events, {} activity rows, {} agents. \
             Dashboard total {}; listed through the API{}: {} of {}. New task after the bulk: {}.\n\n",
            d.issues, d.comments, d.runs, d.cost_events, d.activity, d.agents, self.dashboard_total,
            if self.listed_filter.is_empty() { String::new() } else { format!(" ({})", self.listed_filter) },
            self.listed, self.listed_expected, self.new_identifier));
        s.push_str(&measure::markdown(&self.rows));
        s.push_str(&format!(
            "\nServer memory after the measure phase: VmRSS {:.1} MiB, VmHWM {:.1} MiB.\n",
            self.rss_kib.0 as f64 / 1024.0,
            self.rss_kib.1 as f64 / 1024.0
        ));
        for p in &self.problems {
            s.push_str(&format!("\nPROBLEM: {p}"));
        }
        s
    }
}
