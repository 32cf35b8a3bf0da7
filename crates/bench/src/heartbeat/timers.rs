//! Idle timers: CPU and spawns of an instance whose agents have nothing to do.

use super::*;
use crate::server::Server;
use anyhow::{bail, Context};
use reqwest::StatusCode;
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

pub(crate) struct Timers {
    pub(crate) agents: usize,
    pub(crate) interval_secs: u64,
    pub(crate) clk_tck: u64,
    pub(crate) on: Window,
    pub(crate) off: Window,
}

pub(crate) struct Window {
    pub(crate) secs: f64,
    /// The server's own utime + stime, in clock ticks.
    pub(crate) self_ticks: u64,
    /// The stime part of it (the kernel: fork, exec, pipes, I/O).
    pub(crate) self_sys_ticks: u64,
    /// cutime + cstime: its reaped children (the agents' processes).
    pub(crate) child_ticks: u64,
    /// Runs created in the window, by status; and distinct agents woken.
    pub(crate) runs: BTreeMap<String, usize>,
    pub(crate) agents_woken: usize,
    /// Runs created before the window (the company's earlier waves).
    pub(crate) earlier: usize,
}

impl Window {
    pub(crate) fn runs_total(&self) -> usize {
        self.runs.values().sum()
    }

    pub(crate) fn pct(&self, ticks: u64, clk_tck: u64) -> f64 {
        ticks as f64 / clk_tck as f64 / self.secs * 100.0
    }
}

/// (utime + stime, stime, cutime + cstime) of `pid`, in clock ticks.
pub(crate) fn cpu_ticks(pid: u32) -> anyhow::Result<(u64, u64, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .context("reading /proc/<pid>/stat (Linux only)")?;
    // Fields after the parenthesised command name, which may contain spaces:
    // state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let rest = &stat[stat.rfind(')').context("malformed /proc/<pid>/stat")? + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|s| s.parse().unwrap_or(0))
        .collect();
    if f.len() != 4 {
        bail!("malformed /proc/<pid>/stat: {stat}");
    }
    Ok((f[0] + f[1], f[1], f[2] + f[3]))
}

fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

async fn measure_window(
    client: &reqwest::Client,
    server: &Server,
    company: &str,
    secs: u64,
) -> anyhow::Result<Window> {
    let w0 = wall_nanos();
    let started = Instant::now();
    let (self0, sys0, child0) = cpu_ticks(server.pid)?;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (self1, sys1, child1) = cpu_ticks(server.pid)?;
    let elapsed = started.elapsed();
    let w1 = wall_nanos();
    // Read after the window so the read itself is not measured.
    let url = server.url(&format!(
        "/api/companies/{company}/heartbeat-runs?limit=1000"
    ));
    let list = expect_json(client.get(url), StatusCode::OK).await?;
    let mut runs = BTreeMap::new();
    let mut agents = HashSet::new();
    let mut earlier = 0;
    for run in list.as_array().context("runs list is not an array")? {
        let Some(created) = rfc3339_nanos(&run["createdAt"]) else {
            continue;
        };
        if (w0..w1).contains(&created) {
            *runs
                .entry(run["status"].as_str().unwrap_or("?").to_string())
                .or_insert(0) += 1;
            agents.insert(run["agentId"].as_str().unwrap_or("").to_string());
        } else if created < w0 {
            earlier += 1;
        }
    }
    Ok(Window {
        secs: elapsed.as_secs_f64(),
        self_ticks: self1 - self0,
        self_sys_ticks: sys1 - sys0,
        child_ticks: child1 - child0,
        runs,
        agents_woken: agents.len(),
        earlier,
    })
}

pub(crate) async fn bench_timers(
    client: &reqwest::Client,
    server: &Server,
    args: &HeartbeatArgs,
) -> anyhow::Result<Timers> {
    let company = crate::create_company(client, server, "Timer Co").await?;
    eprintln!(
        "timers: creating {} process agents on {} s timers...",
        args.timer_agents, args.timer_interval_secs
    );
    let mut agents = Vec::new();
    for i in 0..args.timer_agents {
        agents.push(
            create_agent(
                client,
                server,
                &company,
                json!({
                    "name": format!("Timer {i}"),
                    "adapterType": "process",
                    "adapterConfig": { "command": "true" },
                    "runtimeConfig": { "heartbeat": {
                        "enabled": true,
                        "intervalSec": args.timer_interval_secs,
                    } },
                }),
            )
            .await?,
        );
    }
    eprintln!(
        "timers: settling {} s, then measuring {} s with timers on...",
        args.timer_settle_secs, args.timer_window_secs
    );
    tokio::time::sleep(Duration::from_secs(args.timer_settle_secs)).await;
    let on = measure_window(client, server, &company, args.timer_window_secs).await?;

    eprintln!("timers: disabling every timer...");
    for agent in &agents {
        expect_json(
            client
                .patch(server.url(&format!("/api/agents/{agent}")))
                .json(&json!({ "runtimeConfig": { "heartbeat": {
                    "enabled": false,
                    "intervalSec": args.timer_interval_secs,
                } } })),
            StatusCode::OK,
        )
        .await
        .context("disabling a timer")?;
    }
    // Let runs already queued finish, and a scheduler tick or two pass.
    let live_url = server.url(&format!("/api/companies/{company}/live-runs"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let live = expect_json(client.get(&live_url), StatusCode::OK).await?;
        if live.as_array().is_some_and(|a| a.is_empty()) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    eprintln!(
        "timers: measuring {} s with every timer disabled...",
        args.idle_window_secs
    );
    let off = measure_window(client, server, &company, args.idle_window_secs).await?;
    Ok(Timers {
        agents: args.timer_agents,
        interval_secs: args.timer_interval_secs,
        clk_tck: clk_tck(),
        on,
        off,
    })
}

// ----------------------------------------------------------------- fanout
