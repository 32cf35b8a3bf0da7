//! The smaller groups: approvals, costs, activity and the dashboard. Each is
//! a read (or a decision) with a table for people.

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::agent;
use super::client::fail;
use super::issue::enc;
use super::table::{clip, dollars, s, short_id, when, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum ApprovalCmd {
    /// Approvals, pending first.
    List {
        /// pending, approved, rejected, revision_requested or cancelled.
        #[arg(long)]
        status: Option<String>,
    },
    /// Approve a request (by any unique part of its id).
    Approve {
        approval: String,
        #[arg(long)]
        note: Option<String>,
    },
    /// Reject a request.
    Reject {
        approval: String,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum CostCmd {
    /// This month's spend against the budget, and per agent.
    Summary,
}

#[derive(Args, Debug)]
pub struct ActivityArgs {
    #[arg(long, default_value_t = 30)]
    limit: u32,
    /// Only what this agent did (name or url-key).
    #[arg(long)]
    agent: Option<String>,
}

pub async fn approval(ctx: &Ctx, cmd: ApprovalCmd) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    let (wanted, note, action) = match cmd {
        ApprovalCmd::List { status } => {
            let q = status
                .map(|st| format!("?status={}", enc(&st)))
                .unwrap_or_default();
            let list = ctx
                .api
                .get(&format!("/companies/{company}/approvals{q}"))
                .await?;
            if ctx.json {
                ctx.print_json(&list);
                return Ok(());
            }
            let agents = agent::list(ctx, &company).await?;
            let names = agent::names_of(&agents);
            let mut rows = list.as_array().cloned().unwrap_or_default();
            // Pending first: those are the ones waiting on the person reading.
            rows.sort_by_key(|a| a["status"] != "pending");
            let mut t = Table::new(&["STATUS", "ID", "KIND", "REQUESTED BY", "CREATED"]);
            for a in &rows {
                let by = match a["requestedByAgentId"].as_str() {
                    Some(_) => agent::name_or_dash(&names, &a["requestedByAgentId"]),
                    None => "board".to_string(),
                };
                t.row(vec![
                    s(a, "status"),
                    short_id(&s(a, "id")),
                    s(a, "type").replace('_', " "),
                    by,
                    when(a, "createdAt"),
                ]);
            }
            t.print("No approvals.");
            return Ok(());
        }
        ApprovalCmd::Approve { approval, note } => (approval, note, "approve"),
        ApprovalCmd::Reject { approval, note } => (approval, note, "reject"),
    };
    let list = ctx
        .api
        .get(&format!("/companies/{company}/approvals"))
        .await?;
    let rows = list.as_array().cloned().unwrap_or_default();
    let id = s(super::pick_by_id(&rows, &wanted, "approval")?, "id");
    let decided = ctx
        .api
        .post(
            &format!("/approvals/{id}/{action}"),
            json!({ "decisionNote": note }),
        )
        .await
        .map_err(|e| fail(format!("{wanted}: {e}")))?;
    if ctx.json {
        ctx.print_json(&decided);
    } else {
        println!(
            "{} {}: {}",
            s(&decided, "status"),
            short_id(&id),
            s(&decided, "type")
        );
    }
    Ok(())
}

pub async fn cost(ctx: &Ctx, CostCmd::Summary: CostCmd) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    let summary = ctx
        .api
        .get(&format!("/companies/{company}/costs/summary"))
        .await?;
    let by_agent = ctx
        .api
        .get(&format!("/companies/{company}/costs/by-agent"))
        .await?;
    if ctx.json {
        ctx.print_json(&json!({ "summary": summary, "byAgent": by_agent }));
        return Ok(());
    }
    println!(
        "Spent {} of {} ({}%) from {} to {}",
        dollars(&summary["spendCents"]),
        dollars(&summary["budgetCents"]),
        summary["utilizationPercent"].as_f64().unwrap_or(0.0),
        when(&summary, "windowStart"),
        when(&summary, "windowEnd"),
    );
    println!(
        "{} cost events ({} unpriced)\n",
        s(&summary, "eventCount"),
        s(&summary, "unpricedEventCount")
    );
    let mut t = Table::new(&["AGENT", "SPENT", "EVENTS"]);
    for row in by_agent.as_array().into_iter().flatten() {
        let name = row["agentName"]
            .as_str()
            .unwrap_or("(no agent)")
            .to_string();
        let cents = row
            .get("costCents")
            .or(row.get("spendCents"))
            .cloned()
            .unwrap_or(Value::Null);
        let events = row
            .get("eventCount")
            .map(|e| e.to_string())
            .unwrap_or_else(|| "-".into());
        t.row(vec![name, dollars(&cents), events]);
    }
    t.print("No spend recorded this month.");
    Ok(())
}

pub async fn activity(ctx: &Ctx, args: ActivityArgs) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    let agents = agent::list(ctx, &company).await?;
    let mut q = format!("limit={}", args.limit);
    if let Some(a) = args.agent {
        q.push_str(&format!("&agentId={}", s(agent::find(&agents, &a)?, "id")));
    }
    let list = ctx
        .api
        .get(&format!("/companies/{company}/activity?{q}"))
        .await?;
    if ctx.json {
        ctx.print_json(&list);
        return Ok(());
    }
    print_activity(&list, &agent::names_of(&agents));
    Ok(())
}

/// The feed as sentences, like the board's ("Board commented on ACM-3 Fix
/// the login"), repeats in a row folded into one with a count.
fn print_activity(list: &Value, names: &std::collections::HashMap<String, String>) {
    let mut rows: Vec<(String, String, usize)> = Vec::new();
    for e in list.as_array().into_iter().flatten() {
        let line = sentence(e, names);
        match rows.last_mut() {
            Some((_, last, n)) if *last == line => *n += 1,
            _ => rows.push((when(e, "createdAt"), line, 1)),
        }
    }
    let mut t = Table::new(&["WHEN", "WHAT HAPPENED"]);
    for (at, line, n) in rows {
        let line = match n {
            1 => line,
            n => format!("{line} ×{n}"),
        };
        t.row(vec![at, line]);
    }
    t.print("Nothing has happened yet.");
}

/// One entry in words: who, what they did (never the action code) and what
/// it was about, by identifier and title or by name.
pub(crate) fn sentence(e: &Value, names: &std::collections::HashMap<String, String>) -> String {
    use paperclip_core::words;
    let who = match e["actorType"].as_str() {
        Some("agent") => agent::name_or_dash(names, &e["actorId"]),
        Some("system") => "Paperclip".to_string(),
        _ => "Board".to_string(),
    };
    let d = &e["details"];
    let text = |k: &str| d[k].as_str().filter(|v| !v.is_empty());
    let task = match (text("identifier"), text("title")) {
        (Some(ident), Some(title)) => Some(format!("{ident} {}", clip(title, 60))),
        (Some(ident), None) => Some(ident.to_string()),
        _ => None,
    };
    let kind = e["entityType"].as_str().unwrap_or("");
    let about = match kind {
        "issue" => task.clone().unwrap_or_else(|| "a task".into()),
        "agent" => agent::name_or_dash(names, &e["entityId"]),
        "heartbeat_run" | "cost_event" => {
            let mut who = match d["agentId"].as_str() {
                Some(_) => agent::name_or_dash(names, &d["agentId"]),
                None => "an agent".to_string(),
            };
            if let Some(t) = &task {
                who.push_str(&format!(" on {t}"));
            }
            // The short id `paperclip runs show` takes.
            if kind == "heartbeat_run" {
                who.push_str(&format!(" (run {})", short_id(&s(e, "entityId"))));
            }
            who
        }
        "company" => "the company".into(),
        other => {
            let noun = words::entity_noun(other);
            match text("name").or(text("title")) {
                Some(name) => format!("{noun} {name}"),
                None => format!("a {noun}"),
            }
        }
    };
    let action = s(e, "action");
    let verb = match action.as_str() {
        "issue.updated" => match d["changes"]["status"]["to"].as_str() {
            Some(to) => return format!("{who} moved {about} to {}", to.replace('_', " ")),
            None => "edited".to_string(),
        },
        "heartbeat.finished" => {
            let how = text("status").unwrap_or("finished").replace('_', " ");
            return format!("{who} finished a run of {about}: {how}");
        }
        "cost.reported" => {
            return format!(
                "{who} reported {} spent by {about}",
                dollars(&d["costCents"])
            )
        }
        other => words::action(other),
    };
    format!("{who} {verb} {about}")
}

pub async fn dashboard(ctx: &Ctx) -> anyhow::Result<()> {
    let company = ctx.company().await?;
    let id = s(&company, "id");
    let d = ctx.api.get(&format!("/companies/{id}/dashboard")).await?;
    if ctx.json {
        ctx.print_json(&d);
        return Ok(());
    }
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    let (a, t, c) = (&d["agents"], &d["tasks"], &d["costs"]);
    println!("{} ({})", s(&company, "name"), s(&company, "issuePrefix"));
    println!(
        "Tasks:      {} open, {} in progress, {} blocked, {} done ({} in all)",
        n(&t["open"]),
        n(&t["inProgress"]),
        n(&t["blocked"]),
        n(&t["done"]),
        n(&t["total"])
    );
    println!(
        "Agents:     {} running, {} active, {} paused, {} in error ({} in all)",
        n(&a["running"]),
        n(&a["active"]),
        n(&a["paused"]),
        n(&a["error"]),
        n(&a["total"])
    );
    println!(
        "Spend:      {} of {} this month ({}%)",
        dollars(&c["monthSpendCents"]),
        dollars(&c["monthBudgetCents"]),
        c["monthUtilizationPercent"].as_f64().unwrap_or(0.0)
    );
    println!(
        "Waiting:    {} approvals pending, {} budget incidents open",
        n(&d["pendingApprovals"]),
        n(&d["budgets"]["activeIncidents"])
    );
    if let Some(by) = d["runChart"]["last14Days"].as_object() {
        let parts: Vec<String> = by
            .iter()
            .map(|(k, v)| format!("{} {}", n(v), k.replace('_', " ")))
            .collect();
        let text = if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join(", ")
        };
        println!("Runs (14d): {text}");
    }
    let recent = &d["recentActivity"];
    if recent.as_array().is_some_and(|r| !r.is_empty()) {
        println!("\nRecent activity:");
        let agents = agent::list(ctx, &id).await?;
        print_activity(recent, &agent::names_of(&agents));
    }
    Ok(())
}
