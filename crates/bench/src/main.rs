//! `paperclip-bench`: measures a built `paperclip` binary from the outside —
//! start-to-healthy time, resident memory, and create / list / get latency
//! and throughput under concurrent keep-alive clients.
//!
//! `paperclip-bench heartbeat` instead measures the heartbeat machinery:
//! assignment-to-spawn latency, the idle CPU of many timer agents, and live
//! event fan-out over WebSockets (see `heartbeat.rs`).
//!
//! `paperclip-bench pages` measures the board UI's pages with a company of
//! 1,000 tasks (see `pages.rs`).
//!
//! `paperclip-bench scale` builds a company of a million tasks and times every
//! board page and API route at that size (see the library's `scale` module).
//!
//! `paperclip-bench worktrees` measures execution workspaces (git worktrees)
//! on a repository of 10,000 files, with no server (see `worktrees.rs`).
//!
//! `paperclip-bench fleet` runs a simulated day of 100 agents on two
//! instances sharing one Postgres, one killed every few minutes (the
//! library's `fleet` module); like chaos, it fails on a lost run.
//!
//! `paperclip-bench chaos` runs the chaos driver (the library's `chaos`
//! module, which the test suite also runs, briefly) and, unlike the rest,
//! fails when an invariant was violated.
//!
//! The rest reports figures only; it asserts nothing about speed, so it never fails
//! on a slow machine. Progress goes to stderr, the summary to stdout.

mod floor;
mod heartbeat;
mod load;
mod pages;
mod report;
mod revalidate;
mod server;
mod thrift;
mod worktrees;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::load::{Run, Stop};
use crate::report::Report;
use crate::server::Server;

#[derive(Parser)]
#[command(name = "paperclip-bench", about = "Benchmark a paperclip binary")]
struct Args {
    /// Without a subcommand: the CRUD suite (start, RSS, create/list/get).
    #[command(subcommand)]
    suite: Option<Suite>,
    /// The `paperclip` binary to run.
    #[arg(long, global = true, default_value = "target/release/paperclip")]
    server: PathBuf,
    /// Postgres URL for every server started; without it each server uses
    /// SQLite in its own fresh temp data dir.
    #[arg(long, global = true)]
    database_url: Option<String>,
    /// Concurrent clients for the load phases.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Length of each timed list / get phase.
    #[arg(long, default_value_t = 5)]
    duration_secs: u64,
    /// Untimed load before each timed list / get phase (connections, caches).
    #[arg(long, default_value_t = 1)]
    warmup_secs: u64,
    /// How many cold starts to time.
    #[arg(long, default_value_t = 10)]
    starts: usize,
    /// Issues created in the create-throughput phase.
    #[arg(long, default_value_t = 10_000)]
    creates: u64,
    /// Issues in the company that the list phase reads in one page.
    #[arg(long, default_value_t = 1000)]
    list_size: u64,
}

#[derive(Subcommand)]
enum Suite {
    /// Heartbeats: assignment-to-spawn latency, idle CPU of timer agents,
    /// live-event fan-out.
    Heartbeat(heartbeat::HeartbeatArgs),
    /// Board UI pages with a company of 1,000 tasks: server and round-trip time.
    Pages(pages::PagesArgs),
    /// Kills, cancels, pauses and budget stops under load, then the run
    /// engine's invariants, checked from the database and the agents' logs.
    Chaos(ChaosArgs),
    /// A very large company (1M tasks by default), built through the API and
    /// set-based SQL, then every board page and API route timed.
    Scale(ScaleArgs),
    /// Idle heartbeats: agents on the shortest timer, a tenth with work,
    /// our policy beside wake-always; model requests and spawns.
    Thrift(thrift::ThriftArgs),
    /// Execution workspaces on a 10,000-file repository: worktree creation
    /// and reuse, and recording a run's diff, beside plain git. No server.
    Worktrees(worktrees::WorktreeArgs),
    /// A simulated day of 100 agents on two instances sharing one Postgres,
    /// one killed and restarted every few minutes; board route latencies,
    /// RSS and CPU per instance, runs lost / duplicated / left running.
    Fleet(paperclip_bench::fleet::FleetArgs),
}

#[derive(clap::Args)]
struct ScaleArgs {
    #[arg(long, default_value_t = 1_000_000)]
    issues: u64,
    #[arg(long, default_value_t = 1000)]
    agents: usize,
    /// Comments per task on average (0.1: one per ten tasks).
    #[arg(long, default_value_t = 0.1)]
    comments_per_issue: f64,
    /// Finished runs over the last 14 days; default one per ten tasks.
    #[arg(long)]
    runs: Option<u64>,
    /// Timed requests per route, after 3 untimed ones.
    #[arg(long, default_value_t = 50)]
    requests: usize,
    /// Keep the built company here (SQLite file, server.log) afterwards.
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ChaosArgs {
    /// Length of the chaos, before the drain.
    #[arg(long, default_value_t = 600)]
    secs: u64,
    /// Repeats a run's sequence of actions.
    #[arg(long, env = "PAPERCLIP_CHAOS_SEED")]
    seed: Option<u64>,
    #[arg(long, default_value_t = 8)]
    agents: usize,
    /// A SIGKILL restart every this many to `--restart-max-ms` milliseconds.
    #[arg(long, default_value_t = 2000)]
    restart_min_ms: u64,
    #[arg(long, default_value_t = 6000)]
    restart_max_ms: u64,
    /// One board action every this many milliseconds.
    #[arg(long, default_value_t = 30)]
    action_ms: u64,
    /// Deadline for the queue to empty after the chaos.
    #[arg(long, default_value_t = 300)]
    drain_secs: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(Suite::Worktrees(w)) = &args.suite {
        return worktrees::run(w).await;
    }
    if !args.server.is_file() {
        bail!(
            "{} not found; build it with `cargo build --release -p paperclip` or pass --server",
            args.server.display()
        );
    }
    match &args.suite {
        Some(Suite::Heartbeat(hb)) => {
            heartbeat::run(&args.server, args.database_url.as_deref(), hb).await
        }
        Some(Suite::Pages(p)) => pages::run(&args.server, args.database_url.as_deref(), p).await,
        Some(Suite::Chaos(c)) => chaos(&args, c).await,
        Some(Suite::Scale(s)) => scale(&args, s).await,
        Some(Suite::Thrift(t)) => thrift::run(&args.server, args.database_url.as_deref(), t).await,
        Some(Suite::Fleet(f)) => fleet(&args, f).await,
        Some(Suite::Worktrees(_)) => unreachable!("run before the server check"),
        None => crud(args).await,
    }
}

async fn scale(args: &Args, s: &ScaleArgs) -> anyhow::Result<()> {
    let report = paperclip_bench::scale::run(&paperclip_bench::scale::Config {
        binary: args.server.clone(),
        database_url: args.database_url.clone(),
        data_dir: s.data_dir.clone(),
        issues: s.issues,
        agents: s.agents,
        comments_per_issue: s.comments_per_issue,
        runs: s.runs,
        requests: s.requests,
    })
    .await?;
    println!("{}", report.markdown());
    let errors = report.rows.iter().filter(|r| r.error.is_some()).count();
    if !report.problems.is_empty() || errors > 0 {
        bail!(
            "{} build problems, {errors} routes not 2xx",
            report.problems.len()
        );
    }
    Ok(())
}

async fn chaos(args: &Args, c: &ChaosArgs) -> anyhow::Result<()> {
    let config = paperclip_bench::chaos::Config {
        binary: args.server.clone(),
        database_url: args.database_url.clone(),
        secs: c.secs,
        seed: c
            .seed
            .unwrap_or_else(paperclip_bench::chaos::Config::seed_from_env),
        agents: c.agents,
        restart_every: (
            Duration::from_millis(c.restart_min_ms),
            Duration::from_millis(c.restart_max_ms.max(c.restart_min_ms)),
        ),
        action_every: Duration::from_millis(c.action_ms.max(1)),
        drain_secs: c.drain_secs,
    };
    let report = paperclip_bench::chaos::run(&config).await?;
    for v in &report.violations {
        println!("violation: {v}");
    }
    println!("{}", report.summary());
    println!();
    println!("{}", paperclip_bench::chaos::Report::MARKDOWN_HEADER);
    println!("{}", report.markdown());
    if !report.violations.is_empty() {
        bail!(
            "{} violations ({}); evidence kept in {}",
            report.violations.len(),
            report.by_invariant(),
            report.data_dir.display()
        );
    }
    Ok(())
}

/// Fails (non-zero exit) when a run was lost, duplicated or left running,
/// a wake with nothing to do reached the model, or an invariant broke.
async fn fleet(args: &Args, f: &paperclip_bench::fleet::FleetArgs) -> anyhow::Result<()> {
    let Some(url) = args.database_url.clone() else {
        bail!("fleet needs --database-url: two instances share one Postgres database");
    };
    let report = paperclip_bench::fleet::run(&paperclip_bench::fleet::Config {
        binary: args.server.clone(),
        database_url: url,
        args: f.clone(),
    })
    .await?;
    for finding in report.findings() {
        eprintln!("finding: {finding}");
    }
    println!("{}", report.summary());
    println!();
    println!("{}", report.markdown());
    if !report.clean() {
        bail!(
            "{} findings; evidence kept in {}",
            report.findings().len(),
            report.data_dir.display()
        );
    }
    Ok(())
}

async fn crud(args: Args) -> anyhow::Result<()> {
    let db = args.database_url.as_deref();
    let duration = Duration::from_secs(args.duration_secs);
    let warmup = Duration::from_secs(args.warmup_secs);

    eprintln!("timing {} cold starts...", args.starts);
    let mut starts = Vec::new();
    for _ in 0..args.starts {
        let server = Server::start(&args.server, db).await?;
        starts.push(server.start_to_healthy);
        server.stop().await;
    }
    starts.sort_unstable();

    let server = Server::start(&args.server, db).await?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.clients)
        .tcp_nodelay(true)
        .build()?;
    let health: Value = client
        .get(server.url("/api/health"))
        .send()
        .await?
        .json()
        .await?;
    let backend = health["database"]["backend"]
        .as_str()
        .unwrap_or("?")
        .to_string();
    // Let start-up allocations settle before reading the idle footprint.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = server.rss_kib()?;

    eprintln!(
        "creating {} issues at {} clients...",
        args.creates, args.clients
    );
    let company = create_company(&client, &server, "Bench Co").await?;
    let create = create_issues(&client, &server, &company, args.clients, args.creates).await;
    create.warn_errors("create issue");

    eprintln!("filling a company with {} issues...", args.list_size);
    let list_company = create_company(&client, &server, "Bench List Co").await?;
    let fill = create_issues(
        &client,
        &server,
        &list_company,
        args.clients,
        args.list_size,
    )
    .await;
    if fill.errors > 0 {
        bail!("filling the list company failed: {:?}", fill.first_error);
    }
    let list_url = server.url(&format!(
        "/api/companies/{list_company}/issues?limit={}",
        args.list_size
    ));
    // The list's own bytes, answered again with no work by the floor below.
    let list_body = client.get(&list_url).send().await?.bytes().await?.to_vec();
    let page: Value = serde_json::from_slice(&list_body)?;
    let page = page.as_array().context("list response is not an array")?;
    if page.len() as u64 != args.list_size {
        bail!(
            "list returned {} issues, expected {}",
            page.len(),
            args.list_size
        );
    }
    let issue_url = server.url(&format!(
        "/api/issues/{}",
        page[page.len() / 2]["id"]
            .as_str()
            .context("issue without id")?
    ));

    eprintln!("listing at {} clients and at 1 client...", args.clients);
    let list = timed_get(&client, &list_url, args.clients, warmup, duration).await;
    list.warn_errors("list issues");
    let list_1 = timed_get(&client, &list_url, 1, warmup, duration).await;
    list_1.warn_errors("list issues (1 client)");
    // A client that keeps the page and asks whether it changed.
    let tag = revalidate::etag(&client, &list_url).await?;
    let list_304 =
        revalidate::timed(&client, &list_url, &tag, args.clients, warmup, duration).await;
    list_304.warn_errors("list issues, revalidating");

    eprintln!("getting one issue at {} clients...", args.clients);
    let get = timed_get(&client, &issue_url, args.clients, warmup, duration).await;
    get.warn_errors("get issue");
    // No database, little JSON: the floor that HTTP and the runtime set.
    let health = timed_get(
        &client,
        &server.url("/api/health"),
        args.clients,
        warmup,
        duration,
    )
    .await;
    health.warn_errors("health");

    let loaded_rss = server.rss_kib()?;
    server.stop().await;

    // How far the list is from HTTP itself: the same bytes, no work.
    eprintln!("the HTTP floor for a {}-byte body...", list_body.len());
    let list_bytes = list_body.len();
    let floor = floor::Floor::start(list_body)?;
    let floor_list = timed_get(&client, &floor.url(), args.clients, warmup, duration).await;
    floor_list.warn_errors("floor");
    let floor_list_1 = timed_get(&client, &floor.url(), 1, warmup, duration).await;
    floor_list_1.warn_errors("floor (1 client)");
    drop(floor);

    let report = Report {
        backend,
        clients: args.clients,
        list_size: args.list_size,
        starts,
        idle_rss,
        loaded_rss,
        create,
        list,
        list_1,
        list_304,
        get,
        health,
        list_bytes,
        floor_list,
        floor_list_1,
    };
    report.print_summary();
    println!();
    report.print_markdown();
    Ok(())
}

async fn create_company(
    client: &reqwest::Client,
    server: &Server,
    name: &str,
) -> anyhow::Result<String> {
    let resp = client
        .post(server.url("/api/companies"))
        .json(&json!({ "name": name }))
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!(
            "POST /api/companies -> {}: {}",
            resp.status(),
            resp.text().await?
        );
    }
    let body: Value = resp.json().await?;
    Ok(body["id"]
        .as_str()
        .context("company without id")?
        .to_string())
}

async fn create_issues(
    client: &reqwest::Client,
    server: &Server,
    company: &str,
    clients: usize,
    count: u64,
) -> Run {
    let url = server.url(&format!("/api/companies/{company}/issues"));
    let client = client.clone();
    load::run(clients, Stop::Count(count), move |i| {
        let req = client
            .post(&url)
            .json(&json!({ "title": format!("Bench issue {i}") }));
        async move { drain(req.send().await?, StatusCode::CREATED).await }
    })
    .await
}

/// GETs `url` for `warmup` without recording, then for `duration`.
async fn timed_get(
    client: &reqwest::Client,
    url: &str,
    clients: usize,
    warmup: Duration,
    duration: Duration,
) -> Run {
    let op = |client: reqwest::Client, url: String| {
        move |_| {
            let req = client.get(&url);
            async move { drain(req.send().await?, StatusCode::OK).await }
        }
    };
    if !warmup.is_zero() {
        load::run(clients, Stop::For(warmup), op(client.clone(), url.into())).await;
    }
    load::run(clients, Stop::For(duration), op(client.clone(), url.into())).await
}

/// Reads the whole body (so latency includes the transfer) and checks the
/// status.
async fn drain(resp: reqwest::Response, want: StatusCode) -> anyhow::Result<()> {
    let status = resp.status();
    let body = resp.bytes().await?;
    if status != want {
        bail!("{status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}
