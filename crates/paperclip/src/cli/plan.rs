//! `paperclip project|goal list|create`: what the company works towards.
//! Leads and owners are agents by name; goals are named by title.

use clap::Subcommand;
use serde_json::json;

use super::agent;
use super::client::fail;
use super::table::{clip, s, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum ProjectCmd {
    /// The company's projects.
    List,
    /// Create a project: `paperclip project create Website --goal "Launch"`.
    Create {
        name: String,
        #[arg(long, short)]
        description: Option<String>,
        /// The goal it serves (title or id).
        #[arg(long, short)]
        goal: Option<String>,
        /// The agent who leads it (name or url-key).
        #[arg(long)]
        lead: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum GoalCmd {
    /// The company's goals.
    List,
    /// Create a goal: `paperclip goal create "Reach 1k users" --level company`.
    Create {
        title: String,
        #[arg(long, short)]
        description: Option<String>,
        /// company, team, agent or task.
        #[arg(long)]
        level: Option<String>,
        /// The goal above it (title or id).
        #[arg(long)]
        parent: Option<String>,
        /// The agent who owns it (name or url-key).
        #[arg(long)]
        owner: Option<String>,
    },
}

pub async fn project(ctx: &Ctx, cmd: ProjectCmd) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    match cmd {
        ProjectCmd::List => {
            let projects = ctx
                .api
                .get(&format!("/companies/{company}/projects"))
                .await?;
            if ctx.json {
                ctx.print_json(&projects);
                return Ok(());
            }
            let agents = agent::list(ctx, &company).await?;
            let names = agent::names_of(&agents);
            let mut t = Table::new(&["NAME", "STATUS", "LEAD", "TARGET", "KEY"]);
            for p in projects.as_array().into_iter().flatten() {
                t.row(vec![
                    clip(&s(p, "name"), 50),
                    s(p, "status"),
                    agent::name_or_dash(&names, &p["leadAgentId"]),
                    s(p, "targetDate"),
                    s(p, "urlKey"),
                ]);
            }
            t.print("No projects yet.");
        }
        ProjectCmd::Create {
            name,
            description,
            goal,
            lead,
        } => {
            let mut body = json!({ "name": name });
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            if let Some(g) = goal {
                body["goalIds"] = json!([find_goal(ctx, &company, &g).await?]);
            }
            if let Some(who) = lead {
                let agents = agent::list(ctx, &company).await?;
                body["leadAgentId"] = json!(s(agent::find(&agents, &who)?, "id"));
            }
            let p = ctx
                .api
                .post(&format!("/companies/{company}/projects"), body)
                .await?;
            if ctx.json {
                ctx.print_json(&p);
            } else {
                println!("Created project {} ({})", s(&p, "name"), s(&p, "urlKey"));
            }
        }
    }
    Ok(())
}

pub async fn goal(ctx: &Ctx, cmd: GoalCmd) -> anyhow::Result<()> {
    let company = ctx.company_id().await?;
    match cmd {
        GoalCmd::List => {
            let goals = ctx.api.get(&format!("/companies/{company}/goals")).await?;
            if ctx.json {
                ctx.print_json(&goals);
                return Ok(());
            }
            let mut t = Table::new(&["STATUS", "LEVEL", "TITLE"]);
            for g in goals.as_array().into_iter().flatten() {
                t.row(vec![
                    s(g, "status"),
                    s(g, "level"),
                    clip(&s(g, "title"), 80),
                ]);
            }
            t.print("No goals yet.");
        }
        GoalCmd::Create {
            title,
            description,
            level,
            parent,
            owner,
        } => {
            let mut body = json!({ "title": title });
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            if let Some(l) = level {
                body["level"] = json!(l);
            }
            if let Some(p) = parent {
                body["parentId"] = json!(find_goal(ctx, &company, &p).await?);
            }
            if let Some(who) = owner {
                let agents = agent::list(ctx, &company).await?;
                body["ownerAgentId"] = json!(s(agent::find(&agents, &who)?, "id"));
            }
            let g = ctx
                .api
                .post(&format!("/companies/{company}/goals"), body)
                .await?;
            if ctx.json {
                ctx.print_json(&g);
            } else {
                println!("Created goal \"{}\" ({})", s(&g, "title"), s(&g, "level"));
            }
        }
    }
    Ok(())
}

/// A goal's id by its title (case-insensitive) or id.
async fn find_goal(ctx: &Ctx, company: &str, wanted: &str) -> anyhow::Result<String> {
    let goals = ctx.api.get(&format!("/companies/{company}/goals")).await?;
    let w = wanted.trim().to_lowercase();
    goals
        .as_array()
        .into_iter()
        .flatten()
        .find(|g| {
            ["id", "title"]
                .iter()
                .any(|k| g[k].as_str().is_some_and(|v| v.to_lowercase() == w))
        })
        .map(|g| s(g, "id"))
        .ok_or_else(|| fail(format!("{wanted}: no such goal (404)")))
}
