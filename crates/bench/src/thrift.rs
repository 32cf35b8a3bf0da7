//! `paperclip-bench thrift`: what idle heartbeats cost. Two companies run
//! side by side on one server, each with the same agents on the shortest
//! timer (30 s) for the same time, a tenth of them with an open task:
//!
//! - **ours**: the default policy (a timer wake with nothing to act on is
//!   recorded as skipped and spawns nothing);
//! - **wake-always**: every agent opts into `wakeWhenIdle`, which is what a
//!   wake-on-every-timer policy does (the original's behaviour).
//!
//! Each agent is a `process` agent whose run makes one model request to a
//! scripted provider (one per company), so "model invocations" are counted
//! where a provider would bill them. Reported: provider requests, spawned
//! runs and skipped wakes per company. Figures only, no assertions.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

use crate::server::Server;

#[derive(clap::Args)]
pub struct ThriftArgs {
    /// Agents per company.
    #[arg(long, default_value_t = 50)]
    agents: usize,
    /// Share of agents with an open task.
    #[arg(long, default_value_t = 0.1)]
    busy_share: f64,
    /// How long the timers run.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// The agents' `intervalSec` (the server's minimum is 30).
    #[arg(long, default_value_t = 30)]
    interval_secs: u64,
}

struct Side {
    name: &'static str,
    company: String,
    agents: Vec<String>,
    provider: ScriptedProvider,
}

pub async fn run(binary: &Path, db: Option<&str>, args: &ThriftArgs) -> anyhow::Result<()> {
    let server = Server::start(binary, db).await?;
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let busy = ((args.agents as f64) * args.busy_share).round() as usize;
    let mut sides = Vec::new();
    for (name, wake_when_idle) in [("ours", false), ("wake-always", true)] {
        let provider = ScriptedProvider::start(std::iter::empty::<Turn>()).await;
        let company = post(
            &client,
            &server,
            "/api/companies",
            json!({ "name": format!("Thrift {name}") }),
        )
        .await?["id"]
            .as_str()
            .context("company id")?
            .to_string();
        let script = format!(
            "curl -s -o /dev/null -X POST {}/v1/messages -H 'content-type: application/json' \
             -d '{{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":16,\"messages\":[{{\"role\":\"user\",\"content\":\"heartbeat\"}}]}}'\n",
            provider.base_url()
        );
        let mut agents = Vec::new();
        for i in 0..args.agents {
            let agent = post(
                &client,
                &server,
                &format!("/api/companies/{company}/agents"),
                json!({
                    "name": format!("Agent {i}"),
                    "adapterType": "process",
                    "adapterConfig": { "command": "sh", "args": ["-c", script] },
                }),
            )
            .await?;
            agents.push(agent["id"].as_str().context("agent id")?.to_string());
        }
        // The busy tenth: an open task each, which their script leaves open,
        // so every timer wake of theirs has work under either policy.
        for agent in agents.iter().take(busy) {
            post(
                &client,
                &server,
                &format!("/api/companies/{company}/issues"),
                json!({ "title": "Ongoing work", "status": "todo", "assigneeAgentId": agent }),
            )
            .await?;
        }
        sides.push((
            Side {
                name,
                company,
                agents,
                provider,
            },
            wake_when_idle,
        ));
    }
    // Timers on for every agent of both companies at (nearly) the same time.
    for (side, wake_when_idle) in &sides {
        for agent in &side.agents {
            let resp = client
                .patch(server.url(&format!("/api/agents/{agent}")))
                .json(&json!({ "runtimeConfig": { "heartbeat": {
                    "enabled": true, "intervalSec": args.interval_secs, "wakeWhenIdle": wake_when_idle,
                } } }))
                .send()
                .await?;
            if !resp.status().is_success() {
                bail!("enabling a timer: {}", resp.text().await?);
            }
        }
    }
    let window = Duration::from_secs_f64(args.minutes * 60.0);
    eprintln!(
        "{} agents per company ({busy} with work), {} s timers, for {:.1} min...",
        args.agents, args.interval_secs, args.minutes
    );
    let started = Instant::now();
    let (own0, _, children0) = crate::heartbeat::cpu_ticks(server.pid)?;
    while started.elapsed() < window {
        tokio::time::sleep(Duration::from_secs(5).min(window - started.elapsed())).await;
    }
    let (own1, _, children1) = crate::heartbeat::cpu_ticks(server.pid)?;
    let (own, children) = (own1 - own0, children1 - children0);
    // Timers off, so nothing more is counted, then wait for runs in flight.
    for (side, _) in &sides {
        for agent in &side.agents {
            client
                .patch(server.url(&format!("/api/agents/{agent}")))
                .json(&json!({ "runtimeConfig": { "heartbeat": { "enabled": false } } }))
                .send()
                .await?;
        }
    }
    paperclip_bench::poll::until(60, async || {
        let mut live = 0;
        for (side, _) in &sides {
            let v = get(
                &client,
                &server,
                &format!("/api/companies/{}/live-runs", side.company),
            )
            .await
            .ok()?;
            live += v.as_array().map_or(0, Vec::len);
        }
        (live == 0).then_some(())
    })
    .await;
    println!(
        "### Idle heartbeats: {} agents per company, {busy} with work, {} s timers, {:.1} min ({})",
        args.agents,
        args.interval_secs,
        args.minutes,
        if db.is_some() { "Postgres" } else { "SQLite" }
    );
    println!();
    println!("| Policy | Model requests | Runs spawned | Wakes skipped (no_work) |");
    println!("|---|---:|---:|---:|");
    let mut figures = Vec::new();
    for (side, _) in &sides {
        let dash = get(
            &client,
            &server,
            &format!("/api/companies/{}/dashboard", side.company),
        )
        .await?;
        let runs: i64 = dash["runChart"]["last14Days"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_i64).sum());
        let skipped = dash["thrift"]["wakesSkipped24h"]["no_work"]
            .as_i64()
            .unwrap_or(0);
        let requests = side.provider.requests().len();
        figures.push((side.name, requests, runs));
        println!("| {} | {requests} | {runs} | {skipped} |", side.name);
    }
    if let [(_, ours, _), (_, always, _)] = figures[..] {
        if ours > 0 {
            println!();
            println!(
                "Model requests: {ours} vs {always} ({:.1}x fewer).",
                always as f64 / ours as f64
            );
        }
    }
    println!(
        "Server CPU over the window, both companies: {:.1} s own, {:.1} s in the agents' processes.",
        own as f64 / 100.0,
        children as f64 / 100.0
    );
    server.stop().await;
    Ok(())
}

async fn post(
    client: &reqwest::Client,
    server: &Server,
    path: &str,
    body: Value,
) -> anyhow::Result<Value> {
    let resp = client.post(server.url(path)).json(&body).send().await?;
    let status = resp.status();
    let text = resp.text().await?;
    if !status.is_success() {
        bail!("POST {path}: {status} {text}");
    }
    Ok(serde_json::from_str(&text)?)
}

async fn get(client: &reqwest::Client, server: &Server, path: &str) -> anyhow::Result<Value> {
    let resp = client.get(server.url(path)).send().await?;
    if !resp.status().is_success() {
        bail!("GET {path}: {}", resp.status());
    }
    Ok(resp.json().await?)
}
