//! `paperclip company list|show|use`: companies by issue prefix (`ACM`) or
//! name; `use` saves the choice (and the server) for later commands.

use clap::Subcommand;

use super::context::Context;
use super::table::{dollars, s, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// All companies on the server; `*` marks the one commands use.
    List,
    /// One company (default: the current one).
    Show { company: Option<String> },
    /// Make this company (and this server) the default for later commands.
    Use { company: String },
    /// Write a company as a package (the original's markdown format).
    Export(super::company_port::ExportArgs),
    /// Import a package (a folder, a `.json` export or --template) as a new company or --into one.
    Import(super::company_port::ImportArgs),
}

pub async fn run(ctx: &Ctx, cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Export(args) => return super::company_port::export(ctx, args).await,
        Cmd::Import(args) => return super::company_port::import(ctx, args).await,
        Cmd::List => {
            let companies = ctx.api.get("/companies").await?;
            if ctx.json {
                ctx.print_json(&companies);
                return Ok(());
            }
            let current = ctx.company().await.ok().map(|c| s(&c, "id"));
            let mut t = Table::new(&["", "PREFIX", "NAME", "STATUS", "TASKS", "SPENT", "BUDGET"]);
            for c in companies.as_array().into_iter().flatten() {
                let mark = if current.as_deref() == c["id"].as_str() {
                    "*"
                } else {
                    ""
                };
                t.row(vec![
                    mark.to_string(),
                    s(c, "issuePrefix"),
                    s(c, "name"),
                    s(c, "status"),
                    s(c, "issueCounter"),
                    dollars(&c["spentMonthlyCents"]),
                    dollars(&c["budgetMonthlyCents"]),
                ]);
            }
            t.print("No companies yet: create one on the board, or start with `paperclip run --sample`.");
        }
        Cmd::Show { company } => {
            let c = match company {
                Some(wanted) => ctx.find_company(&wanted).await?,
                None => ctx.company().await?,
            };
            if ctx.json {
                ctx.print_json(&c);
                return Ok(());
            }
            println!(
                "{} ({})  {}",
                s(&c, "name"),
                s(&c, "issuePrefix"),
                s(&c, "status")
            );
            println!("Id:      {}", s(&c, "id"));
            println!("Tasks:   {} created", s(&c, "issueCounter"));
            println!(
                "Spend:   {} of {} this month",
                dollars(&c["spentMonthlyCents"]),
                dollars(&c["budgetMonthlyCents"])
            );
            if let Some(d) = c["description"].as_str() {
                println!("\n{d}");
            }
        }
        Cmd::Use { company } => {
            let c = ctx.find_company(&company).await?;
            let saved = Context {
                api_base: Some(ctx.api.base.clone()),
                company_id: Some(s(&c, "id")),
                company_prefix: Some(s(&c, "issuePrefix")),
            };
            let path = saved.save()?;
            if ctx.json {
                ctx.print_json(&c);
            } else {
                println!(
                    "Using {} ({}) on {} (saved in {})",
                    s(&c, "issuePrefix"),
                    s(&c, "name"),
                    ctx.api.base,
                    path.display()
                );
            }
        }
    }
    Ok(())
}
