//! Dashboard: agent cards, counters, 14-day charts, recent activity and tasks.

use std::collections::{BTreeMap, HashMap};

use axum::extract::{Path, State};
use chrono::Utc;
use maud::html;
use paperclip_core::agent::AgentStatus;
use paperclip_core::model::Agent;
use paperclip_core::workspace_ops::human_bytes;
use paperclip_store::runs::workspace_life;
use paperclip_store::{issues, org::agents, views::dashboard, views::ui};

use super::by_id;
use crate::fmt::{money, percent, pill, time};
use crate::pages::activity;
use crate::{charts, html, layout, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let now = Utc::now();
    // Independent reads at once (each a connection of its own).
    let recent_filter = issues::Filter {
        limit: 8,
        ..issues::Filter::default()
    };
    let (d, agents, recent, worktrees, (_, disk_budget), statuses) = tokio::try_join!(
        dashboard::get(store, cid, now),
        agents::list(store, cid),
        issues::list(store, cid, &recent_filter),
        workspace_life::usage(store, cid),
        workspace_life::bounds(store, cid),
        paperclip_store::views::run_status::running(store, cid),
    )
    .map_err(store_failure)?;
    // An agent with several runs shows its newest run's line.
    let statuses: HashMap<&str, &paperclip_core::run_status::StatusUpdate> = statuses
        .iter()
        .map(|l| (l.agent_id.as_str(), &l.status))
        .collect();
    let cards = cards(&agents);
    let card_ids: Vec<&str> = cards.iter().map(|a| a.id.as_str()).collect();
    let working = ui::working_on_of(store, cid, &card_ids)
        .await
        .map_err(store_failure)?;
    let working: HashMap<&str, (&str, &str)> = working
        .iter()
        .map(|(agent, ident, title)| (agent.as_str(), (ident.as_str(), title.as_str())))
        .collect();
    let names = by_id(&agents);
    let feed = activity::collapse(&d.recent_activity);
    let feed = &feed[..feed.len().min(10)];
    let feed_entries: Vec<_> = feed.iter().map(|(e, _)| (*e).clone()).collect();
    let feed_names = activity::names(store, cid, &agents, &feed_entries).await?;
    let p = &ctx.company.issue_prefix;

    // The charts' 14 UTC days, from the dashboard's kept day counts.
    let days: Vec<String> = d.run_chart.days.iter().map(|x| x.day.clone()).collect();
    let by_status = |days: &[dashboard::Day]| -> Vec<BTreeMap<String, i64>> {
        days.iter().map(|x| x.by_status.clone()).collect()
    };
    let run_days = by_status(&d.run_chart.days);
    let task_days = by_status(&d.task_activity.days);
    let success: Vec<charts::Finished> = run_days
        .iter()
        .map(|d| {
            // A stopped run neither succeeded nor failed: it is left out.
            let ok = d.get("succeeded").copied().unwrap_or(0);
            let failed = ["failed", "timed_out"]
                .iter()
                .map(|s| d.get(*s).copied().unwrap_or(0))
                .sum::<i64>();
            charts::Finished {
                succeeded: ok,
                finished: ok + failed,
            }
        })
        .collect();

    let count = |m: &BTreeMap<String, i64>, k: &str| m.get(k).copied().unwrap_or(0);
    let a = &d.agents.by_status;
    let t = &d.tasks.by_status;
    let enabled = d.agents.total - count(a, "terminated") - count(a, "pending_approval");
    let open = count(t, "backlog")
        + count(t, "todo")
        + count(t, "in_progress")
        + count(t, "in_review")
        + count(t, "blocked");
    let spend = d.costs.month_spend_cents;
    let budget = d.costs.month_budget_cents;

    let body = html! {
        header.page-head { h1 { "Dashboard" } p.muted { (ctx.company.name) @if let Some(goal) = &ctx.company.description { " — " (goal) } }
            // What curl examples and the paperclipai CLI (`-C`) ask for.
            p.muted.api-id { "Company id for the API: " code #company-id { (ctx.company.id) } } }
        section.counters {
            div.counter data-counter="agents-enabled" { b { (enabled) } span { "agents enabled" } }
            div.counter data-counter="agents-running" { b { (count(a, "running")) } span { "running" } }
            div.counter data-counter="agents-paused" { b { (count(a, "paused")) } span { "paused" } }
            div.counter.warn[count(a, "error") > 0] data-counter="agents-error" { b { (count(a, "error")) } span { "errors" } }
            div.counter data-counter="tasks-in-progress" { b { (count(t, "in_progress")) } span { "tasks in progress" } }
            div.counter data-counter="tasks-open" { b { (open) } span { "open" } }
            div.counter data-counter="tasks-blocked" { b { (count(t, "blocked")) } span { "blocked" } }
            div.counter data-counter="month-spend" {
                b { (money(spend)) }
                span { @if budget > 0 { "of " (money(budget)) " (" (percent(spend, budget)) "%)" } @else { "this month, no budget" } }
            }
            a.counter href={"/" (p) "/approvals"} data-counter="pending-approvals" { b { (d.pending_approvals) } span { "pending approvals" } }
            @if worktrees.open > 0 {
                a.counter.warn[worktrees.disk_bytes >= disk_budget] href={"/" (p) "/company/settings"} data-counter="worktrees" {
                    b { (worktrees.open) }
                    span { "task worktrees, " (human_bytes(worktrees.disk_bytes)) " of " (human_bytes(disk_budget)) }
                }
            }
        }
        @if agents.is_empty() || d.tasks.total == 0 { (super::chief::start(&ctx.company.id)) }
        (crate::thrift::section(&d.thrift))
        section.cards {
            h2 { "Agents" }
            @if agents.is_empty() { p.empty { "No agents yet. Hire one from " a href={"/" (p) "/agents"} { "Agents" } "." } }
            @if agents.len() > cards.len() {
                p.muted { "The " (cards.len()) " that most need a look, of " (agents.len()) ": " a href={"/" (p) "/agents"} { "all agents" } "." }
            }
            div.grid {
                @for agent in &cards {
                    @let task = working.get(agent.id.as_str());
                    a.card.agent-card href={"/" (p) "/agents/" (agent.url_key)} data-live-agent=(agent.id) {
                        div.card-head { strong { (agent.name) } (pill(&agent.status)) (crate::thrift::usage_limit(agent.usage_limited_until.as_deref())) }
                        div.muted { (agent.title.as_deref().unwrap_or(agent.role.as_str())) " · " (paperclip_core::words::adapter(&agent.adapter_type)) }
                        div.working {
                            @match task {
                                Some((identifier, title)) => { span.ident { (identifier) } " " (title) }
                                None => span.muted { "Not working on a task" }
                            }
                        }
                        @if let Some(line) = statuses.get(agent.id.as_str()) { div.card-status { (crate::fmt::status_line(line)) } }
                        @if let Some(reason) = &agent.error_reason { div.error-text { (reason) } }
                    }
                }
            }
        }
        section.charts {
            (charts::stacked_bars("Runs by outcome, 14 days", &days, &run_days))
            (charts::stacked_bars("Tasks created, by status", &days, &task_days))
            (charts::success_rate("Run success rate, 14 days", &days, &success))
        }
        div.columns {
            section {
                h2 { "Recent activity" }
                ul.feed {
                    @for (e, n) in feed {
                        li { (activity::row(e, *n, &feed_names, p)) " " (time(&e.created_at, now)) }
                    }
                }
            }
            section {
                h2 { "Recent tasks" }
                ul.tasklist {
                    @for i in &recent.issues {
                        li {
                            a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) }
                            " " (pill(&i.status))
                            @if let Some(agent) = i.assignee_agent_id.as_deref().and_then(|id| names.get(id)) { span.muted { " · " (agent.name) } }
                        }
                    }
                }
            }
        }
    };
    html(layout::page(&ctx, "dashboard", "Dashboard", body))
}

/// Agent cards the dashboard shows at most: a company of a thousand agents
/// got a thousand cards (400 KB), which nobody reads; the Agents page lists
/// everyone.
const CARDS: usize = 24;

/// The agents that most need a look, in this order: failing, working,
/// ready, paused, waiting for approval, let go; hiring order within each.
fn cards(agents: &[Agent]) -> Vec<&Agent> {
    let rank = |s: &AgentStatus| match s {
        AgentStatus::Error => 0,
        AgentStatus::Running => 1,
        AgentStatus::Active | AgentStatus::Idle => 2,
        AgentStatus::Paused => 3,
        AgentStatus::PendingApproval => 4,
        AgentStatus::Terminated => 5,
    };
    let mut cards: Vec<&Agent> = agents.iter().collect();
    // Stable: `agents` comes in hiring order.
    cards.sort_by_key(|a| rank(&a.status));
    cards.truncate(CARDS);
    cards
}
