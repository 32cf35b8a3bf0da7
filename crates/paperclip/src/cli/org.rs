//! `paperclip org` (who reports to whom, as a tree) and `paperclip budget
//! show|set` (monthly caps in dollars, the company's and each agent's).

use clap::Subcommand;
use serde_json::{json, Value};

use super::agent;
use super::client::fail;
use super::table::{dollars, s, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum BudgetCmd {
    /// This month's caps and spend: the company's and each agent's.
    Show,
    /// Set a monthly cap in dollars (0 means no cap): `paperclip budget set 50`,
    /// or an agent's with `--agent eli`.
    Set {
        dollars: f64,
        /// The agent (name or url-key) instead of the company.
        #[arg(long)]
        agent: Option<String>,
    },
}

/// The org chart as an indented tree, top-level agents first.
pub async fn org(ctx: &Ctx) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    let tree = ctx.api.get(&format!("/companies/{company}/org")).await?;
    if ctx.json {
        ctx.print_json(&tree);
        return Ok(());
    }
    let roots = tree.as_array().cloned().unwrap_or_default();
    if roots.is_empty() {
        println!("No agents yet.");
    }
    for node in &roots {
        print_node(node, 0);
    }
    Ok(())
}

fn print_node(node: &Value, depth: usize) {
    println!(
        "{}{} ({}, {})",
        "  ".repeat(depth),
        s(node, "name"),
        s(node, "role"),
        s(node, "status")
    );
    for child in node["reports"].as_array().into_iter().flatten() {
        print_node(child, depth + 1);
    }
}

pub async fn budget(ctx: &Ctx, cmd: BudgetCmd) -> anyhow::Result<()> {
    let company = ctx.company().await?;
    let cid = s(&company, "id");
    match cmd {
        BudgetCmd::Show => {
            let agents = agent::list(ctx, &cid).await?;
            if ctx.json {
                ctx.print_json(&json!({ "company": company, "agents": agents }));
                return Ok(());
            }
            let mut t = Table::new(&["WHO", "SPENT THIS MONTH", "MONTHLY CAP"]);
            let cap = |v: &Value| match v.as_i64() {
                Some(0) | None => "none".to_string(),
                Some(_) => dollars(v),
            };
            t.row(vec![
                format!("{} (company)", s(&company, "name")),
                dollars(&company["spentMonthlyCents"]),
                cap(&company["budgetMonthlyCents"]),
            ]);
            for a in &agents {
                t.row(vec![
                    s(a, "name"),
                    dollars(&a["spentMonthlyCents"]),
                    cap(&a["budgetMonthlyCents"]),
                ]);
            }
            t.print("");
        }
        BudgetCmd::Set {
            dollars: amount,
            agent: who,
        } => {
            if !amount.is_finite() || !(0.0..=10_000_000.0).contains(&amount) {
                return Err(fail(format!(
                    "{amount}: a budget is between 0 and 10000000 dollars"
                )));
            }
            let body = json!({ "budgetMonthlyCents": (amount * 100.0).round() as i64 });
            let (path, name) = match who {
                Some(who) => {
                    let agents = agent::list(ctx, &cid).await?;
                    let a = agent::find(&agents, &who)?;
                    (format!("/agents/{}/budgets", s(a, "id")), s(a, "name"))
                }
                None => (format!("/companies/{cid}/budgets"), s(&company, "name")),
            };
            let updated = ctx.api.patch(&path, body).await?;
            if ctx.json {
                ctx.print_json(&updated);
            } else if amount == 0.0 {
                println!("{name} has no monthly cap now.");
            } else {
                println!("{name}'s monthly cap is now ${amount:.2}.");
            }
        }
    }
    Ok(())
}
