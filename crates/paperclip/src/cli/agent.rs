//! `paperclip agent list|show|wake|pause|resume`: agents are named by their name or
//! url-key (`eli`), never by UUID.

use std::collections::HashMap;

use clap::Subcommand;
use serde_json::{json, Value};

use super::client::fail;
use super::table::{clip, dollars, s, short_id, when, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// The company's agents: status, role, adapter, last heartbeat.
    List,
    /// One agent: status, who it reports to, budget, its latest runs.
    Show { agent: String },
    /// Wake the agent now (a manual heartbeat); prints the run it queued.
    Wake {
        agent: String,
        /// The task the run is about (`ACM-12`).
        #[arg(long)]
        issue: Option<String>,
        /// Why, for the run's record.
        #[arg(long)]
        reason: Option<String>,
        /// Follow the run's log until it finishes (as `paperclip runs log --follow`).
        #[arg(long, short)]
        follow: bool,
    },
    /// Pause the agent: no more heartbeats, and a running run is stopped.
    Pause { agent: String },
    /// Resume a paused agent.
    Resume { agent: String },
}

pub async fn run(ctx: &Ctx, cmd: Cmd) -> anyhow::Result<i32> {
    match cmd {
        Cmd::List => {
            let company = ctx.company_id().await?;
            let agents = ctx.api.get(&format!("/companies/{company}/agents")).await?;
            if ctx.json {
                ctx.print_json(&agents);
                return Ok(0);
            }
            let list = agents.as_array().cloned().unwrap_or_default();
            let names = names_of(&list);
            let mut t = Table::new(&[
                "NAME",
                "STATUS",
                "ROLE",
                "REPORTS TO",
                "ADAPTER",
                "LAST HEARTBEAT",
            ]);
            for a in &list {
                t.row(vec![
                    s(a, "name"),
                    s(a, "status"),
                    s(a, "role"),
                    name_or_dash(&names, &a["reportsTo"]),
                    s(a, "adapterType"),
                    when(a, "lastHeartbeatAt"),
                ]);
            }
            t.print("No agents yet.");
        }
        Cmd::Show { agent } => {
            let company = ctx.company_id().await?;
            let list = list(ctx, &company).await?;
            let a = find(&list, &agent)?;
            let id = s(a, "id");
            let runs = ctx
                .api
                .get(&format!(
                    "/companies/{company}/heartbeat-runs?agentId={id}&limit=5"
                ))
                .await?;
            if ctx.json {
                let mut a = a.clone();
                a["recentRuns"] = runs;
                ctx.print_json(&a);
                return Ok(0);
            }
            let names = names_of(&list);
            println!("{} ({})  {}", s(a, "name"), s(a, "urlKey"), s(a, "status"));
            println!(
                "Role:          {} {}",
                s(a, "role"),
                a["title"].as_str().unwrap_or("")
            );
            println!("Reports to:    {}", name_or_dash(&names, &a["reportsTo"]));
            println!("Adapter:       {}", s(a, "adapterType"));
            match a["budgetMonthlyCents"].as_i64().unwrap_or(0) {
                0 => println!(
                    "Budget:        no budget ({} spent this month)",
                    dollars(&a["spentMonthlyCents"])
                ),
                _ => println!(
                    "Budget:        {} spent of {} this month",
                    dollars(&a["spentMonthlyCents"]),
                    dollars(&a["budgetMonthlyCents"])
                ),
            }
            println!("Last heartbeat: {}", when(a, "lastHeartbeatAt"));
            for key in ["pauseReason", "errorReason"] {
                if let Some(r) = a[key].as_str() {
                    println!(
                        "{}: {r}",
                        if key == "pauseReason" {
                            "Paused"
                        } else {
                            "Error"
                        }
                    );
                }
            }
            if let Some(c) = a["capabilities"].as_str() {
                println!("Capabilities:  {}", clip(c, 100));
            }
            let runs = runs.as_array().cloned().unwrap_or_default();
            if !runs.is_empty() {
                println!("\nRecent runs:");
                let mut t = Table::new(&["STATUS", "RUN", "REASON", "STARTED"]);
                for r in &runs {
                    t.row(vec![
                        s(r, "status"),
                        short_id(&s(r, "id")),
                        s(r, "wakeReason"),
                        when(r, "createdAt"),
                    ]);
                }
                print!("{}", t.render());
            }
        }
        Cmd::Wake {
            agent,
            issue,
            reason,
            follow,
        } => {
            let company = ctx.company_id().await?;
            let list = list(ctx, &company).await?;
            let a = find(&list, &agent)?;
            let mut body = json!({ "source": "on_demand", "triggerDetail": "manual" });
            if let Some(r) = reason {
                body["reason"] = json!(r);
            }
            if let Some(i) = &issue {
                // The wake route wants the task's id; the identifier is
                // resolved (and checked) first so a typo reads as one.
                let found = ctx
                    .api
                    .get_about(&format!("/issues/{}", super::issue::enc(i)), i)
                    .await?;
                body["issueId"] = found["id"].clone();
            }
            let run = ctx
                .api
                .post(&format!("/agents/{}/wakeup", s(a, "id")), body)
                .await
                .map_err(|e| fail(format!("{}: {e}", s(a, "name"))))?;
            if ctx.json && !follow {
                ctx.print_json(&run);
                return Ok(0);
            }
            let run_id = s(&run, "id");
            if !ctx.json {
                println!(
                    "Woke {}: run {} {}",
                    s(a, "name"),
                    short_id(&run_id),
                    s(&run, "status")
                );
            }
            if follow {
                return super::run::follow(ctx, &run_id).await;
            }
            println!(
                "Follow it with: paperclip runs log {} --follow",
                short_id(&run_id)
            );
        }
        Cmd::Pause { agent } => return lever(ctx, &agent, "pause", "Paused").await,
        Cmd::Resume { agent } => return lever(ctx, &agent, "resume", "Resumed").await,
    }
    Ok(0)
}

/// Pause or resume (board only; the server says why when it refuses).
async fn lever(ctx: &Ctx, agent: &str, action: &str, done: &str) -> anyhow::Result<i32> {
    let company = ctx.company_id().await?;
    let list = list(ctx, &company).await?;
    let a = find(&list, agent)?;
    let updated = ctx
        .api
        .post(&format!("/agents/{}/{action}", s(a, "id")), json!({}))
        .await
        .map_err(|e| fail(format!("{}: {e}", s(a, "name"))))?;
    if ctx.json {
        ctx.print_json(&updated);
    } else {
        println!(
            "{done} {} (now {}).",
            s(&updated, "name"),
            s(&updated, "status")
        );
    }
    Ok(0)
}

pub async fn list(ctx: &Ctx, company: &str) -> anyhow::Result<Vec<Value>> {
    let agents = ctx.api.get(&format!("/companies/{company}/agents")).await?;
    Ok(agents.as_array().cloned().unwrap_or_default())
}

/// An agent by id, url-key or name (case-insensitive), live agents before
/// terminated ones. A url key is one agent; names are unique among live
/// agents, and a name that still matches several (agents made before names
/// were unique) is refused, listing their url keys.
pub fn find<'a>(list: &'a [Value], wanted: &str) -> anyhow::Result<&'a Value> {
    let w = wanted.trim().to_lowercase();
    let is = |a: &Value, k: &str| a[k].as_str().is_some_and(|v| v.to_lowercase() == w);
    if let Some(a) = list.iter().find(|a| is(a, "id")) {
        return Ok(a);
    }
    let live = |a: &&Value| a["status"] != "terminated";
    let gone = |a: &&Value| a["status"] == "terminated";
    for group in [
        list.iter().filter(live).collect::<Vec<_>>(),
        list.iter().filter(gone).collect(),
    ] {
        if let Some(a) = group.iter().find(|a| is(a, "urlKey")) {
            return Ok(a);
        }
        let named: Vec<&Value> = group.into_iter().filter(|a| is(a, "name")).collect();
        match named.as_slice() {
            [] => {}
            [one] => return Ok(one),
            several => {
                let keys: Vec<String> = several.iter().map(|a| s(a, "urlKey")).collect();
                return Err(fail(format!(
                    "{wanted}: several agents have this name; name one by its url key: {}",
                    keys.join(", ")
                )));
            }
        }
    }
    let known: Vec<String> = list.iter().map(|a| s(a, "urlKey")).collect();
    Err(fail(format!(
        "{wanted}: no such agent (404); the agents are: {}",
        if known.is_empty() {
            "none yet".to_string()
        } else {
            known.join(", ")
        }
    )))
}

/// Agent id → name, for tables that would otherwise show UUIDs.
pub fn names_of(list: &[Value]) -> HashMap<String, String> {
    list.iter().map(|a| (s(a, "id"), s(a, "name"))).collect()
}

pub fn name_or_dash(names: &HashMap<String, String>, id: &Value) -> String {
    match id.as_str() {
        Some(id) => names.get(id).cloned().unwrap_or_else(|| short_id(id)),
        None => "-".to_string(),
    }
}
