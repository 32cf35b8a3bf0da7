//! `paperclip-bench pages`: how long the board's pages take with a company
//! of realistic size — by default 1,000 tasks over 8 agents in an org chart,
//! runs, comments, cost events and an approval. Each page is fetched one
//! request at a time; the server's own time comes from the `Server-Timing`
//! header the UI sets, the client's from the full round trip with the body.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::server::Server;

#[derive(clap::Args)]
pub struct PagesArgs {
    /// Tasks in the company.
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Agents, each reporting to the one before it in groups of three.
    #[arg(long, default_value_t = 8)]
    agents: usize,
    /// Timed requests per page (after 5 untimed ones).
    #[arg(long, default_value_t = 100)]
    requests: usize,
}

const STATUSES: [&str; 6] = [
    "backlog",
    "todo",
    "in_progress",
    "in_review",
    "blocked",
    "done",
];

pub async fn run(binary: &Path, db: Option<&str>, args: &PagesArgs) -> anyhow::Result<()> {
    let server = Server::start(binary, db).await?;
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let post = |path: String, body: Value| {
        let client = client.clone();
        let url = server.url(&path);
        async move {
            let resp = client.post(&url).json(&body).send().await?;
            let status = resp.status();
            let body: Value = resp.json().await?;
            if !status.is_success() {
                bail!("POST {url} -> {status}: {body}");
            }
            anyhow::Ok(body)
        }
    };

    eprintln!(
        "building a company with {} tasks and {} agents...",
        args.tasks, args.agents
    );
    let company = post(
        "/api/companies".into(),
        json!({ "name": "Pages Co", "description": "Benchmark company" }),
    )
    .await?;
    let cid = company["id"].as_str().context("company id")?.to_string();
    let prefix = company["issuePrefix"]
        .as_str()
        .context("prefix")?
        .to_string();
    let mut agents: Vec<Value> = Vec::new();
    for i in 0..args.agents {
        let reports_to = if i == 0 {
            Value::Null
        } else {
            agents[(i - 1) / 3]["id"].clone()
        };
        // The first agent runs (so there are runs to show); the rest do not
        // wake on assignment, so the fill measures pages, not the executor.
        let wake = i == 0;
        let agent = post(
            format!("/api/companies/{cid}/agents"),
            json!({ "name": format!("Agent {i}"), "role": "engineer", "reportsTo": reports_to,
                "adapterType": "process", "adapterConfig": { "command": "true" },
                "runtimeConfig": { "heartbeat": { "wakeOnAssignment": wake } } }),
        )
        .await?;
        agents.push(agent);
    }
    let mut detail = String::new();
    for i in 0..args.tasks {
        let agent = &agents[i % agents.len()];
        let issue = post(
            format!("/api/companies/{cid}/issues"),
            json!({ "title": format!("Task number {i} for the launch"),
                "description": "Do the **thing** and report back.\n\n- one\n- two",
                "status": STATUSES[i % STATUSES.len()], "assigneeAgentId": agent["id"] }),
        )
        .await?;
        if i == 0 {
            detail = issue["identifier"]
                .as_str()
                .context("identifier")?
                .to_string();
            for c in 0..30 {
                post(
                    format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
                    json!({ "body": format!("Progress note {c}: *still* on it.") }),
                )
                .await?;
            }
        }
        if i % 5 == 0 {
            post(
                format!("/api/companies/{cid}/cost-events"),
                json!({ "agentId": agent["id"], "issueId": issue["id"], "provider": "anthropic",
                    "model": "claude-sonnet-4", "inputTokens": 1000, "outputTokens": 200, "costCents": 3 }),
            )
            .await?;
        }
    }
    let approval = post(
        format!("/api/companies/{cid}/approvals"),
        json!({ "type": "hire_agent", "payload": { "name": "Candidate", "role": "designer" } }),
    )
    .await?;
    let project = post(
        format!("/api/companies/{cid}/projects"),
        json!({ "name": "Launch" }),
    )
    .await?;
    let goal = post(
        format!("/api/companies/{cid}/goals"),
        json!({ "title": "Ship the kit" }),
    )
    .await?;
    // Let the first agent's runs settle so the pages read a quiet store.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs: Value = client
        .get(server.url(&format!("/api/companies/{cid}/heartbeat-runs?limit=1")))
        .send()
        .await?
        .json()
        .await?;
    let run = runs[0]["id"]
        .as_str()
        .context("a run of agent 0")?
        .to_string();

    let pages = [
        "dashboard".to_string(),
        "inbox".into(),
        "tasks".into(),
        "tasks?view=board".into(),
        format!("tasks/{detail}"),
        "agents".into(),
        "agents/agent-0".into(),
        "org".into(),
        "approvals".into(),
        "costs".into(),
        "activity".into(),
        "projects".into(),
        "goals".into(),
        "company/settings".into(),
        "tasks?sort=priority".into(),
        "agents/agent-0/runs".into(),
        format!("agents/agent-0/runs/{run}"),
        format!(
            "approvals/{}",
            approval["id"].as_str().context("approval id")?
        ),
        format!("projects/{}", project["id"].as_str().context("project id")?),
        format!("goals/{}", goal["id"].as_str().context("goal id")?),
    ];
    println!("| Page | Server p50 | Server p95 | Server max | Round trip p50 | HTML |");
    println!("|---|---|---|---|---|---|");
    for page in &pages {
        let url = server.url(&format!("/{prefix}/{page}"));
        let mut server_ms = Vec::with_capacity(args.requests);
        let mut client_ms = Vec::with_capacity(args.requests);
        let mut size = 0;
        for i in 0..args.requests + 5 {
            let started = Instant::now();
            let resp = client.get(&url).send().await?;
            let status = resp.status();
            let timing = resp
                .headers()
                .get("server-timing")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split("dur=").nth(1))
                .and_then(|v| v.parse::<f64>().ok());
            let body = resp.bytes().await?;
            let took = started.elapsed().as_secs_f64() * 1000.0;
            if !status.is_success() {
                bail!("GET {url} -> {status}: {}", String::from_utf8_lossy(&body));
            }
            if i >= 5 {
                server_ms.push(timing.context("no Server-Timing header")?);
                client_ms.push(took);
                size = body.len();
            }
        }
        let pct = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
        };
        println!(
            "| /{prefix}/{page} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} KB |",
            pct(&mut server_ms, 0.5),
            pct(&mut server_ms, 0.95),
            pct(&mut server_ms, 1.0),
            pct(&mut client_ms, 0.5),
            size / 1024
        );
    }
    server.stop().await;
    Ok(())
}
