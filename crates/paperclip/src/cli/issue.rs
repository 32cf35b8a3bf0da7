//! `paperclip issue …`: tasks by identifier (`ACM-12`). The API accepts an
//! identifier wherever it accepts an issue id, so only assignees (agent
//! names) need resolving here.

use clap::Subcommand;
use serde_json::{json, Map, Value};

use super::agent;
use super::table::{clip, s, when, Table};
use super::Ctx;

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Tasks, newest first.
    List {
        /// Only these statuses, comma-separated: backlog, todo, in_progress,
        /// in_review, blocked, done, cancelled.
        #[arg(long)]
        status: Option<String>,
        /// Only tasks assigned to this agent (name or url-key).
        #[arg(long)]
        assignee: Option<String>,
        /// Text to find in titles, descriptions and identifiers.
        #[arg(long, short)]
        query: Option<String>,
        /// At most this many tasks.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// One task with its comments: `paperclip issue show ACM-12`.
    Show { issue: String },
    /// Create a task in the company.
    Create {
        title: String,
        #[arg(long, short)]
        description: Option<String>,
        /// Agent name or url-key.
        #[arg(long, short)]
        assignee: Option<String>,
        /// critical, high, medium or low.
        #[arg(long, short)]
        priority: Option<String>,
        /// Starting status (default: the server's, `todo` or `backlog`).
        #[arg(long)]
        status: Option<String>,
    },
    /// Change a task: `paperclip issue update ACM-12 --status done`.
    Update {
        issue: String,
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        priority: Option<String>,
        #[arg(long)]
        title: Option<String>,
        #[arg(long)]
        description: Option<String>,
        /// Agent name or url-key; `none` unassigns.
        #[arg(long)]
        assignee: Option<String>,
        /// A comment added with the change.
        #[arg(long, short)]
        comment: Option<String>,
    },
    /// Comment on a task: `paperclip issue comment ACM-12 "Looks good"`. On a
    /// done or cancelled task a person's comment reopens work an agent owns.
    Comment {
        issue: String,
        body: String,
        /// Reopen a done or cancelled task with this comment.
        #[arg(long, conflicts_with = "no_reopen")]
        reopen: bool,
        /// Leave a done or cancelled task closed: a note that wakes nobody.
        #[arg(long)]
        no_reopen: bool,
    },
    /// Reopen a done or cancelled task: `paperclip issue reopen ACM-12`. Its
    /// agent is woken to continue where it left off (same workspace, same
    /// session).
    Reopen {
        issue: String,
        /// Where it goes: backlog, todo or in_progress.
        #[arg(long, default_value = "todo")]
        status: String,
        /// What is still to do, added as a comment.
        #[arg(long, short)]
        comment: Option<String>,
    },
    /// Check a task out for an agent (it becomes `in_progress`, theirs alone).
    Checkout {
        issue: String,
        /// The agent (name or url-key); with an agent key, that agent.
        #[arg(long, short)]
        agent: Option<String>,
        /// Statuses the task may be in, comma-separated.
        #[arg(long, default_value = "todo,backlog,blocked")]
        expected: String,
    },
    /// Give a checked-out task back: it returns to `todo` with no owner.
    Release { issue: String },
    /// Delete a task for good (board only).
    Delete {
        issue: String,
        /// Required: deleting cannot be undone.
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(ctx: &Ctx, cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::List {
            status,
            assignee,
            query,
            limit,
        } => {
            let company = ctx.company_id().await?;
            let agents = agent::list(ctx, &company).await?;
            let filtered = status.is_some() || assignee.is_some() || query.is_some();
            // One more than shown tells whether the list is cut.
            let mut params = vec![format!("limit={}", limit.saturating_add(1))];
            if let Some(st) = status {
                params.push(format!("status={}", enc(&st)));
            }
            if let Some(who) = assignee {
                params.push(format!(
                    "assigneeAgentId={}",
                    s(agent::find(&agents, &who)?, "id")
                ));
            }
            if let Some(q) = query {
                params.push(format!("q={}", enc(&q)));
            }
            let mut issues = ctx
                .api
                .get(&format!("/companies/{company}/issues?{}", params.join("&")))
                .await?;
            let cut = match issues.as_array_mut() {
                Some(list) if list.len() > limit as usize => {
                    list.truncate(limit as usize);
                    true
                }
                _ => false,
            };
            if ctx.json {
                ctx.print_json(&issues);
                return Ok(());
            }
            let names = agent::names_of(&agents);
            let mut t = Table::new(&["ID", "STATUS", "PRIORITY", "ASSIGNEE", "TITLE"]);
            for i in issues.as_array().into_iter().flatten() {
                t.row(vec![
                    s(i, "identifier"),
                    s(i, "status"),
                    s(i, "priority"),
                    assignee_name(&names, i),
                    clip(&s(i, "title"), 70),
                ]);
            }
            t.print("No tasks match.");
            if cut {
                let total = match filtered {
                    true => None,
                    false => ctx
                        .api
                        .get(&format!("/companies/{company}/dashboard"))
                        .await
                        .ok()
                        .and_then(|d| d["tasks"]["total"].as_i64()),
                };
                match total {
                    Some(n) => eprintln!(
                        "Showing the newest {limit} of {n} tasks; --limit {n} shows them all."
                    ),
                    None => eprintln!(
                        "Showing the newest {limit} matching tasks; there are more: --limit N shows more."
                    ),
                }
            }
        }
        Cmd::Show { issue } => {
            let i = ctx
                .api
                .get_about(&format!("/issues/{}", enc(&issue)), &issue)
                .await?;
            let comments = ctx
                .api
                .get_about(
                    &format!("/issues/{}/comments?order=asc", enc(&issue)),
                    &issue,
                )
                .await?;
            if ctx.json {
                let mut i = i.clone();
                i["comments"] = comments;
                ctx.print_json(&i);
                return Ok(());
            }
            let agents = agent::list(ctx, &s(&i, "companyId")).await?;
            let names = agent::names_of(&agents);
            println!(
                "{}  {}  {}",
                s(&i, "identifier"),
                s(&i, "status"),
                s(&i, "title")
            );
            println!("Priority:  {}", s(&i, "priority"));
            println!("Assignee:  {}", assignee_name(&names, &i));
            println!(
                "Created:   {}   Updated: {}",
                when(&i, "createdAt"),
                when(&i, "updatedAt")
            );
            let refs = |key: &str| -> Vec<String> {
                i[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| format!("{} ({})", s(r, "identifier"), s(r, "status")))
                    .collect()
            };
            for (key, label) in [("blockedBy", "Blocked by"), ("blocks", "Blocks")] {
                let list = refs(key);
                if !list.is_empty() {
                    println!("{label}: {}", list.join(", "));
                }
            }
            if let Some(d) = i["description"].as_str().filter(|d| !d.trim().is_empty()) {
                println!("\n{}", d.trim_end());
            }
            let comments = comments.as_array().cloned().unwrap_or_default();
            if !comments.is_empty() {
                println!("\nComments ({}):", comments.len());
                for c in &comments {
                    let author = match c["authorAgentId"].as_str() {
                        Some(id) => names.get(id).cloned().unwrap_or_else(|| "agent".into()),
                        None => "board".to_string(),
                    };
                    println!("\n  {author}, {}:", when(c, "createdAt"));
                    for line in s(c, "body").lines() {
                        println!("    {line}");
                    }
                }
            }
        }
        Cmd::Create {
            title,
            description,
            assignee,
            priority,
            status,
        } => {
            let company = ctx.company_id().await?;
            let mut body = json!({ "title": title });
            if let Some(d) = description {
                body["description"] = json!(d);
            }
            if let Some(p) = priority {
                body["priority"] = json!(p);
            }
            if let Some(st) = status {
                body["status"] = json!(st);
            }
            let mut assignee_name = None;
            if let Some(who) = assignee {
                let agents = agent::list(ctx, &company).await?;
                let found = agent::find(&agents, &who)?;
                body["assigneeAgentId"] = json!(s(found, "id"));
                assignee_name = Some(s(found, "name"));
            }
            let i = ctx
                .api
                .post(&format!("/companies/{company}/issues"), body)
                .await?;
            if ctx.json {
                ctx.print_json(&i);
            } else {
                println!("{}", created_line(&i, assignee_name.as_deref()));
            }
        }
        Cmd::Update {
            issue,
            status,
            priority,
            title,
            description,
            assignee,
            comment,
        } => {
            let mut body = Map::new();
            for (key, value) in [
                ("status", status),
                ("priority", priority),
                ("title", title),
                ("description", description),
                ("comment", comment),
            ] {
                if let Some(v) = value {
                    body.insert(key.into(), json!(v));
                }
            }
            if let Some(who) = assignee {
                let id = if who.eq_ignore_ascii_case("none") {
                    Value::Null
                } else {
                    let current = ctx
                        .api
                        .get_about(&format!("/issues/{}", enc(&issue)), &issue)
                        .await?;
                    let agents = agent::list(ctx, &s(&current, "companyId")).await?;
                    json!(s(agent::find(&agents, &who)?, "id"))
                };
                body.insert("assigneeAgentId".into(), id);
            }
            if body.is_empty() {
                return Err(super::client::fail(
                    "nothing to change: pass --status, --priority, --title, --description, --assignee or --comment",
                ));
            }
            let i = ctx
                .api
                .patch(&format!("/issues/{}", enc(&issue)), Value::Object(body))
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            if ctx.json {
                ctx.print_json(&i);
            } else {
                println!(
                    "Updated {} ({}): {}",
                    s(&i, "identifier"),
                    s(&i, "status"),
                    s(&i, "title")
                );
                print_not_woken(&i);
            }
        }
        Cmd::Comment {
            issue,
            body,
            reopen,
            no_reopen,
        } => {
            let mut payload = json!({ "body": body });
            if reopen || no_reopen {
                payload["reopen"] = json!(reopen);
            }
            let c = ctx
                .api
                .post(&format!("/issues/{}/comments", enc(&issue)), payload)
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            if ctx.json {
                ctx.print_json(&c);
            } else {
                match c["reopenedFrom"].as_str() {
                    Some(from) => println!("Commented on {issue} and reopened it (was {from})."),
                    None => println!("Commented on {issue}."),
                }
                print_not_woken(&c);
            }
        }
        Cmd::Reopen {
            issue,
            status,
            comment,
        } => {
            let mut body = json!({ "status": status });
            if let Some(c) = comment {
                body["comment"] = json!(c);
            }
            let current = ctx
                .api
                .get_about(&format!("/issues/{}", enc(&issue)), &issue)
                .await?;
            if !matches!(s(&current, "status").as_str(), "done" | "cancelled") {
                return Err(super::client::fail(format!(
                    "{} is {}, not done or cancelled: nothing to reopen",
                    s(&current, "identifier"),
                    s(&current, "status")
                )));
            }
            let i = ctx
                .api
                .patch(&format!("/issues/{}", enc(&issue)), body)
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            print_issue(ctx, &i, "Reopened");
        }
        Cmd::Checkout {
            issue,
            agent: who,
            expected,
        } => {
            let agent_id = match who {
                Some(who) => {
                    let current = ctx
                        .api
                        .get_about(&format!("/issues/{}", enc(&issue)), &issue)
                        .await?;
                    let agents = agent::list(ctx, &s(&current, "companyId")).await?;
                    s(agent::find(&agents, &who)?, "id")
                }
                None if ctx.api.has_key() => s(&ctx.api.get("/agents/me").await?, "id"),
                None => {
                    return Err(super::client::fail(
                        "whose checkout? pass --agent <name> (or an agent's --api-key)",
                    ))
                }
            };
            let statuses: Vec<&str> = expected.split(',').map(str::trim).collect();
            let i = ctx
                .api
                .post(
                    &format!("/issues/{}/checkout", enc(&issue)),
                    json!({ "agentId": agent_id, "expectedStatuses": statuses }),
                )
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            print_issue(ctx, &i, "Checked out");
        }
        Cmd::Release { issue } => {
            let i = ctx
                .api
                .post(&format!("/issues/{}/release", enc(&issue)), json!({}))
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            print_issue(ctx, &i, "Released");
        }
        Cmd::Delete { issue, yes } => {
            if !yes {
                return Err(super::client::fail(format!(
                    "deleting {issue} cannot be undone: run it again with --yes"
                )));
            }
            let i = ctx
                .api
                .delete(&format!("/issues/{}", enc(&issue)))
                .await
                .map_err(|e| super::client::about(e, &issue))?;
            print_issue(ctx, &i, "Deleted");
        }
    }
    Ok(())
}

/// Whom a comment on a closed task did not wake, and why.
fn print_not_woken(c: &Value) {
    for n in c["notWoken"].as_array().into_iter().flatten() {
        println!("{}", s(n, "message"));
    }
}

fn print_issue(ctx: &Ctx, i: &Value, done: &str) {
    if ctx.json {
        ctx.print_json(i);
    } else {
        println!(
            "{done} {} ({}): {}",
            s(i, "identifier"),
            s(i, "status"),
            s(i, "title")
        );
    }
}

/// What creating a task did, in words: whether its agent starts now or
/// when the task leaves the backlog (a backlog task wakes nobody).
fn created_line(i: &Value, assignee: Option<&str>) -> String {
    let ident = s(i, "identifier");
    let title = s(i, "title");
    match (i["status"].as_str(), assignee) {
        (Some("backlog"), Some(who)) => format!(
            "Created {ident} in the backlog: {title}. {who} starts it when you move it to todo \
             (paperclip issue update {ident} --status todo)."
        ),
        (Some("backlog"), None) => format!("Created {ident} in the backlog: {title}"),
        (_, Some(who)) => format!(
            "Created {ident} ({}): {title}. {who} is woken to work on it.",
            s(i, "status").replace('_', " ")
        ),
        (_, None) => format!(
            "Created {ident} ({}): {title}",
            s(i, "status").replace('_', " ")
        ),
    }
}

fn assignee_name(names: &std::collections::HashMap<String, String>, issue: &Value) -> String {
    match (
        issue["assigneeAgentId"].as_str(),
        issue["assigneeUserId"].as_str(),
    ) {
        (Some(_), _) => agent::name_or_dash(names, &issue["assigneeAgentId"]),
        (None, Some(_)) => "board".to_string(),
        _ => "-".to_string(),
    }
}

/// Percent-encodes a query value (reqwest's URL type would do it, but the
/// paths here are built as strings).
pub fn enc(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b',' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
