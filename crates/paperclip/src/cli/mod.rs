//! `paperclip company|agent|issue|run|…`: a command-line client of the HTTP
//! API. People type and read identifiers (`ACM-12`, agent names, company
//! prefixes); the CLI turns them into the ids the API wants. Tables are for
//! people, `--json` prints the API's own JSON for scripts.
//!
//! Exit codes: 0 done, 1 the server refused or could not be reached (the
//! message says which and why), 2 a usage error (clap's own).

mod agent;
mod client;
mod company;
mod company_port;
mod context;
pub(crate) mod doctor;
mod issue;
mod mcp;
mod misc;
mod org;
mod plan;
mod run;
mod table;

use clap::{Args, Subcommand};
use serde_json::Value;

use self::client::{fail, Api};
use self::context::Context;

/// Flags every client command understands, before or after the subcommand.
#[derive(Args, Debug, Clone)]
pub struct Global {
    /// The server's base URL [default: the saved context's, else http://127.0.0.1:3100].
    #[arg(long, global = true, env = "PAPERCLIP_API_URL", value_name = "URL")]
    api_base: Option<String>,
    /// An agent API key. The local board on loopback needs none.
    #[arg(long, global = true, env = "PAPERCLIP_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// The agent's heartbeat run, sent with the key so its writes are
    /// attributed to it (inside a run Paperclip sets it).
    #[arg(long, global = true, env = "PAPERCLIP_RUN_ID")]
    run_id: Option<String>,
    /// The company: its issue prefix (`ACM`), name or id [default: the saved
    /// context's (`paperclip company use`), else the only company].
    #[arg(long, short = 'C', global = true, env = "PAPERCLIP_COMPANY")]
    company: Option<String>,
    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
pub enum ClientCommand {
    /// List companies, show one, or choose the one later commands use.
    #[command(subcommand)]
    Company(company::Cmd),
    /// List agents, show one, wake, pause or resume one.
    #[command(subcommand)]
    Agent(agent::Cmd),
    /// List, show, create, update, comment on, check out, release and delete tasks.
    #[command(subcommand)]
    Issue(issue::Cmd),
    /// Heartbeat runs: list, show, read or follow a run's log. (Plural
    /// because `paperclip run` starts the server.)
    #[command(subcommand)]
    Runs(run::Cmd),
    /// List and create projects.
    #[command(subcommand)]
    Project(plan::ProjectCmd),
    /// List and create goals.
    #[command(subcommand)]
    Goal(plan::GoalCmd),
    /// List approvals and decide them.
    #[command(subcommand)]
    Approval(misc::ApprovalCmd),
    /// Spend this month: the company's and each agent's.
    #[command(subcommand)]
    Cost(misc::CostCmd),
    /// Monthly budgets: show them, set the company's or an agent's.
    #[command(subcommand)]
    Budget(org::BudgetCmd),
    /// The org chart: who reports to whom.
    Org,
    /// Paperclip's MCP tools over stdio for an assistant (Claude Code, Codex …): JSON-RPC lines go to /api/mcp as you.
    Mcp,
    /// What happened lately, newest first.
    Activity(misc::ActivityArgs),
    /// The company at a glance: agents, tasks, spend, approvals, runs.
    Dashboard,
    /// Check the data dir, database, agent CLIs and port that `paperclip run`
    /// (with the same flags) would use.
    Doctor(crate::config::RunArgs),
    /// Print a shell completion script: `paperclip completions bash > /etc/bash_completion.d/paperclip`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Runs one client command and exits the process with its code; errors are
/// printed as one sentence (no anyhow chain or backtrace for a person to wade
/// through).
pub fn main(
    global: Global,
    cmd: ClientCommand,
    command: fn() -> clap::Command,
) -> anyhow::Result<()> {
    // `paperclip issue list | head` should end quietly when `head` closes the
    // pipe, as other CLIs do, not panic in `println!`. Only the client gets
    // this: the server keeps ignoring SIGPIPE (Rust's default).
    // SAFETY: setting a signal disposition before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if let ClientCommand::Completions { shell } = cmd {
        let mut cmd = command();
        clap_complete::generate(shell, &mut cmd, "paperclip", &mut std::io::stdout());
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let code = match runtime.block_on(dispatch(global, cmd)) {
        Ok(code) => code,
        Err(err) => {
            match err.downcast_ref::<client::Failure>() {
                Some(f) => eprintln!("paperclip: {f}"),
                None => eprintln!("paperclip: {err:#}"),
            }
            1
        }
    };
    // Flush what was printed before leaving without unwinding.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

async fn dispatch(global: Global, cmd: ClientCommand) -> anyhow::Result<i32> {
    if let ClientCommand::Doctor(args) = cmd {
        return doctor::run(args, global.json).await;
    }
    if let ClientCommand::Mcp = cmd {
        return mcp::run(global).await;
    }
    let ctx = Ctx::new(global)?;
    match cmd {
        ClientCommand::Company(c) => company::run(&ctx, c).await?,
        ClientCommand::Agent(c) => return agent::run(&ctx, c).await,
        ClientCommand::Issue(c) => issue::run(&ctx, c).await?,
        ClientCommand::Runs(c) => return run::run(&ctx, c).await,
        ClientCommand::Project(c) => plan::project(&ctx, c).await?,
        ClientCommand::Goal(c) => plan::goal(&ctx, c).await?,
        ClientCommand::Budget(c) => org::budget(&ctx, c).await?,
        ClientCommand::Org => org::org(&ctx).await?,
        ClientCommand::Approval(c) => misc::approval(&ctx, c).await?,
        ClientCommand::Cost(c) => misc::cost(&ctx, c).await?,
        ClientCommand::Activity(a) => misc::activity(&ctx, a).await?,
        ClientCommand::Dashboard => misc::dashboard(&ctx).await?,
        ClientCommand::Doctor(_) | ClientCommand::Completions { .. } | ClientCommand::Mcp => {
            unreachable!()
        }
    }
    Ok(0)
}

pub const DEFAULT_API_BASE: &str = "http://127.0.0.1:3100";

/// What every command needs: the API, the output mode, and the company the
/// person means.
pub struct Ctx {
    pub api: Api,
    pub json: bool,
    company_flag: Option<String>,
    saved: Context,
}

impl Ctx {
    fn new(global: Global) -> anyhow::Result<Ctx> {
        let saved = Context::load()?;
        let base = global
            .api_base
            .clone()
            .filter(|b| !b.is_empty())
            .or_else(|| saved.api_base.clone())
            .unwrap_or_else(|| DEFAULT_API_BASE.to_string());
        Ok(Ctx {
            api: Api::new(&base, global.api_key.clone(), global.run_id.clone())?,
            json: global.json,
            company_flag: global.company.filter(|c| !c.is_empty()),
            saved,
        })
    }

    /// Prints the API's JSON, pretty, for `--json`.
    pub fn print_json(&self, value: &Value) {
        println!(
            "{}",
            serde_json::to_string_pretty(value).expect("JSON values serialize")
        );
    }

    /// The company the person means: `--company`, else the saved context
    /// (only when it was saved for this same server), else the only one.
    pub async fn company(&self) -> anyhow::Result<Value> {
        if let Some(wanted) = &self.company_flag {
            return self.find_company(wanted).await;
        }
        let same_server = self
            .saved
            .api_base
            .as_deref()
            .is_none_or(|b| b.trim_end_matches('/') == self.api.base);
        if let (Some(id), true) = (&self.saved.company_id, same_server) {
            return self.api.get(&format!("/companies/{id}")).await.map_err(|e| {
                let label = self.saved.company_prefix.as_deref().unwrap_or(id);
                fail(format!(
                    "the saved company {label} is not on {}: {e} (run `paperclip company use <prefix>`)",
                    self.api.base
                ))
            });
        }
        let companies = self.api.get("/companies").await?;
        let list = companies.as_array().cloned().unwrap_or_default();
        match list.len() {
            1 => Ok(list[0].clone()),
            0 => Err(fail(format!(
                "there is no company on {} yet: create one on the board (or `paperclip run --sample`)",
                self.api.base
            ))),
            _ => {
                let prefixes: Vec<String> = list.iter().map(|c| table::s(c, "issuePrefix")).collect();
                Err(fail(format!(
                    "there are {} companies ({}): pass --company <prefix> or run `paperclip company use <prefix>`",
                    list.len(),
                    prefixes.join(", ")
                )))
            }
        }
    }

    pub async fn company_id(&self) -> anyhow::Result<String> {
        Ok(table::s(&self.company().await?, "id"))
    }

    /// A company by issue prefix, name or id (case-insensitive).
    pub async fn find_company(&self, wanted: &str) -> anyhow::Result<Value> {
        let companies = self.api.get("/companies").await?;
        let list = companies.as_array().cloned().unwrap_or_default();
        let w = wanted.trim().to_lowercase();
        list.into_iter()
            .find(|c| {
                ["issuePrefix", "id", "name"]
                    .iter()
                    .any(|k| c[k].as_str().is_some_and(|v| v.to_lowercase() == w))
            })
            .ok_or_else(|| {
                fail(format!(
                    "{wanted}: no such company on {} (404)",
                    self.api.base
                ))
            })
    }
}

/// Finds one row whose id is, ends with or starts with what the person
/// typed (tables show the last 8 characters of run and approval ids).
pub fn pick_by_id<'a>(rows: &'a [Value], wanted: &str, what: &str) -> anyhow::Result<&'a Value> {
    let w = wanted.trim().to_lowercase();
    if let Some(exact) = rows.iter().find(|r| r["id"].as_str() == Some(wanted)) {
        return Ok(exact);
    }
    let matches: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            r["id"]
                .as_str()
                .is_some_and(|id| w.len() >= 4 && (id.ends_with(&w) || id.starts_with(&w)))
        })
        .collect();
    match matches.len() {
        1 => Ok(matches[0]),
        0 => Err(fail(format!("{wanted}: no such {what} (404)"))),
        n => Err(fail(format!(
            "{wanted}: {n} {what}s match; give more of the id"
        ))),
    }
}
