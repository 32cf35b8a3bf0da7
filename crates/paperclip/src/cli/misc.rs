//! The smaller groups: approvals, costs, activity and the dashboard. Each is
//! a read (or a decision) with a table for people.

use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::agent;
use super::client::fail;
use super::issue::enc;
use super::table::{dollars, s, short_id, when, Table};
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
                    s(a, "type"),
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

fn print_activity(list: &Value, names: &std::collections::HashMap<String, String>) {
    let mut t = Table::new(&["WHEN", "WHO", "ACTION", "ABOUT"]);
    for e in list.as_array().into_iter().flatten() {
        let who = match e["actorType"].as_str() {
            Some("agent") => agent::name_or_dash(names, &e["actorId"]),
            Some("user") => "board".to_string(),
            Some(other) => other.to_string(),
            None => "-".to_string(),
        };
        let about = match e["details"]["identifier"].as_str() {
            Some(ident) => ident.to_string(),
            None => match e["entityType"].as_str() {
                Some("agent") => agent::name_or_dash(names, &e["entityId"]),
                Some("heartbeat_run") => format!("run {}", short_id(&s(e, "entityId"))),
                Some(kind) => format!("{kind} {}", short_id(&s(e, "entityId"))),
                None => "-".to_string(),
            },
        };
        t.row(vec![when(e, "createdAt"), who, s(e, "action"), about]);
    }
    t.print("Nothing has happened yet.");
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
        let parts: Vec<String> = by.iter().map(|(k, v)| format!("{} {k}", n(v))).collect();
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
