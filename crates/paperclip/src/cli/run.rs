//! `paperclip runs list|show|log`: heartbeat runs. Runs have no identifier of
//! their own, so tables show the random tail of the id (see
//! [`short_id`]) and any unique part of an id is accepted back.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use clap::Subcommand;
use futures::future::join_all;
use serde_json::Value;

use super::agent;
use super::client::fail;
use super::issue::enc;
use super::table::{clip, s, short_id, when, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Runs, newest first.
    List {
        /// Only this agent's runs (name or url-key).
        #[arg(long)]
        agent: Option<String>,
        /// Only runs with this status: queued, running, succeeded, failed,
        /// cancelled, timed_out.
        #[arg(long)]
        status: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: u32,
    },
    /// One run: outcome, agent, task, timing, error, output excerpt.
    Show { run: String },
    /// A run's log; with `--follow`, keeps printing until the run finishes.
    Log {
        run: String,
        #[arg(long, short)]
        follow: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: Cmd) -> anyhow::Result<i32> {
    match cmd {
        Cmd::List {
            agent,
            status,
            limit,
        } => {
            let company = ctx.company_id().await?;
            let agents = agent::list(ctx, &company).await?;
            let mut params = vec![format!("limit={limit}")];
            if let Some(a) = agent {
                params.push(format!("agentId={}", s(agent::find(&agents, &a)?, "id")));
            }
            if let Some(st) = status {
                params.push(format!("status={}", enc(&st)));
            }
            let runs = ctx
                .api
                .get(&format!(
                    "/companies/{company}/heartbeat-runs?{}",
                    params.join("&")
                ))
                .await?;
            if ctx.json {
                ctx.print_json(&runs);
                return Ok(0);
            }
            let runs = runs.as_array().cloned().unwrap_or_default();
            let names = agent::names_of(&agents);
            let tasks = identifiers(ctx, &runs).await;
            let mut t = Table::new(&[
                "STATUS", "RUN", "AGENT", "TASK", "REASON", "STARTED", "TOOK",
            ]);
            for r in &runs {
                t.row(vec![
                    s(r, "status"),
                    short_id(&s(r, "id")),
                    agent::name_or_dash(&names, &r["agentId"]),
                    task_of(&tasks, r),
                    s(r, "wakeReason"),
                    when(r, "createdAt"),
                    took(r),
                ]);
            }
            t.print("No runs yet.");
        }
        Cmd::Show { run } => {
            let r = find(ctx, &run).await?;
            if ctx.json {
                ctx.print_json(&r);
                return Ok(0);
            }
            let agents = agent::list(ctx, &s(&r, "companyId")).await?;
            let names = agent::names_of(&agents);
            let tasks = identifiers(ctx, std::slice::from_ref(&r)).await;
            println!("{}  run {}", s(&r, "status"), short_id(&s(&r, "id")));
            println!("Id:       {}", s(&r, "id"));
            println!("Agent:    {}", agent::name_or_dash(&names, &r["agentId"]));
            println!("Task:     {}", task_of(&tasks, &r));
            println!(
                "Reason:   {} ({})",
                s(&r, "wakeReason"),
                s(&r, "invocationSource")
            );
            println!("Started:  {}   Took: {}", when(&r, "startedAt"), took(&r));
            if !r["exitCode"].is_null() {
                println!("Exit:     {}", s(&r, "exitCode"));
            }
            if let Some(e) = r["error"].as_str() {
                println!("Error:    {} ({})", e, s(&r, "errorCode"));
            }
            for (key, label) in [("stdoutExcerpt", "Output"), ("stderrExcerpt", "Errors")] {
                if let Some(text) = r[key].as_str().filter(|t| !t.trim().is_empty()) {
                    println!("\n{label}:");
                    for line in text.lines() {
                        println!("  {line}");
                    }
                }
            }
            println!("\nFull log: paperclip runs log {}", short_id(&s(&r, "id")));
        }
        Cmd::Log { run, follow: true } => {
            let r = find(ctx, &run).await?;
            return self::follow(ctx, &s(&r, "id")).await;
        }
        Cmd::Log { run, follow: false } => {
            let r = find(ctx, &run).await?;
            let id = s(&r, "id");
            let mut offset = 0u64;
            loop {
                let (next, done) = print_page(ctx, &id, offset).await?;
                if done || next == offset {
                    break;
                }
                offset = next;
            }
        }
    }
    Ok(0)
}

/// Prints the log as it grows until the run has finished and every byte is
/// printed, then a line with the outcome. Exit code 1 when the run did not
/// succeed, so `paperclip agent wake x --follow && …` chains.
pub async fn follow(ctx: &Ctx, run_id: &str) -> anyhow::Result<i32> {
    let started = Instant::now();
    let mut offset = 0u64;
    let mut last_status = String::new();
    loop {
        // Status first, then the log: a run seen finished before its last
        // read has all its log lines written.
        let r = ctx.api.get(&format!("/heartbeat-runs/{run_id}")).await?;
        let status = s(&r, "status");
        let finished = !matches!(status.as_str(), "queued" | "running");
        if status != last_status && !ctx.json && !finished {
            eprintln!("… run {} is {status}", short_id(run_id));
        }
        last_status = status.clone();
        loop {
            let (next, _) = print_page(ctx, run_id, offset).await?;
            if next == offset {
                break;
            }
            offset = next;
        }
        if finished {
            if ctx.json {
                ctx.print_json(&r);
            } else {
                let mut line = format!("run {} {status}", short_id(run_id));
                if !r["exitCode"].is_null() {
                    line.push_str(&format!(" (exit {})", s(&r, "exitCode")));
                }
                line.push_str(&format!(" in {}", took(&r)));
                if let Some(e) = r["error"].as_str() {
                    line.push_str(&format!(": {}", clip(e, 200)));
                }
                println!("{line}");
            }
            return Ok(if status == "succeeded" { 0 } else { 1 });
        }
        if started.elapsed() > Duration::from_secs(24 * 3600) {
            return Err(fail("gave up following after 24 hours"));
        }
        // A quarter second: a person sees lines promptly, the server sees
        // four cheap reads a second.
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Prints one page of the NDJSON log from `offset`; returns the next offset
/// and whether the page was the last. `--json` prints the NDJSON lines as
/// they are; people get the chunks, with non-stdout streams marked.
async fn print_page(ctx: &Ctx, run_id: &str, offset: u64) -> anyhow::Result<(u64, bool)> {
    let page = ctx
        .api
        .get(&format!("/heartbeat-runs/{run_id}/log?offset={offset}"))
        .await?;
    let content = page["content"].as_str().unwrap_or("");
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for line in content.lines().filter(|l| !l.trim().is_empty()) {
        if ctx.json {
            writeln!(out, "{line}")?;
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            writeln!(out, "{line}")?;
            continue;
        };
        let chunk = entry["chunk"].as_str().unwrap_or("");
        match entry["stream"].as_str().unwrap_or("stdout") {
            "stdout" => write!(out, "{chunk}")?,
            stream => {
                for l in chunk.lines() {
                    writeln!(out, "[{stream}] {l}")?;
                }
            }
        }
    }
    out.flush()?;
    let next = page["nextOffset"].as_u64().unwrap_or(offset);
    Ok((next, content.is_empty()))
}

/// A run by full id, or by a unique part of the id among the company's
/// latest 1,000 runs.
async fn find(ctx: &Ctx, wanted: &str) -> anyhow::Result<Value> {
    if wanted.len() == 36 {
        return ctx
            .api
            .get_about(&format!("/heartbeat-runs/{}", enc(wanted)), wanted)
            .await;
    }
    let company = ctx.company_id().await?;
    let runs = ctx
        .api
        .get(&format!("/companies/{company}/heartbeat-runs?limit=1000"))
        .await?;
    let runs = runs.as_array().cloned().unwrap_or_default();
    Ok(super::pick_by_id(&runs, wanted, "run")?.clone())
}

/// Issue id → identifier for the runs' tasks: from the wake's payload when
/// it carries one, else one concurrent look-up per distinct task.
async fn identifiers(ctx: &Ctx, runs: &[Value]) -> HashMap<String, String> {
    let mut known = HashMap::new();
    let mut missing = Vec::new();
    for r in runs {
        let Some(id) = r["issueId"].as_str() else {
            continue;
        };
        match r["contextSnapshot"]["payload"]["identifier"].as_str() {
            Some(ident) => {
                known.insert(id.to_string(), ident.to_string());
            }
            None if !missing.contains(&id.to_string()) => missing.push(id.to_string()),
            None => {}
        }
    }
    missing.retain(|id| !known.contains_key(id));
    let paths: Vec<String> = missing.iter().map(|id| format!("/issues/{id}")).collect();
    let found = join_all(paths.iter().map(|p| ctx.api.get(p))).await;
    for (id, issue) in missing.iter().zip(found) {
        if let Ok(issue) = issue {
            known.insert(id.clone(), s(&issue, "identifier"));
        }
    }
    known
}

fn task_of(tasks: &HashMap<String, String>, run: &Value) -> String {
    match run["issueId"].as_str() {
        Some(id) => tasks.get(id).cloned().unwrap_or_else(|| short_id(id)),
        None => "-".to_string(),
    }
}

/// How long the run took (or has been going), from its timestamps.
fn took(run: &Value) -> String {
    let parse = |k: &str| {
        run[k]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    };
    let Some(start) = parse("startedAt") else {
        return "-".to_string();
    };
    let end = parse("finishedAt")
        .map(|e| e.to_utc())
        .unwrap_or_else(chrono::Utc::now);
    let ms = (end - start.to_utc()).num_milliseconds().max(0);
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}
