//! Costs: month to date by agent, project, model and task, with budget bars
//! that show the 80 % warning and the hard stop, and budget editing. Every
//! list is its top rows (biggest spend first) read from the month's kept
//! totals, so the page costs the same at a million tasks.

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_store::money::costs::{self, By, Window};
use paperclip_store::{money::budgets, org::agents};

use crate::fmt::{count, money, percent};
use crate::{html, layout, store_failure, PageResult, Web};

/// A budget bar: green below 80 %, amber from 80 %, red at 100 % (hard stop).
pub fn bar(spent: i64, budget: i64) -> Markup {
    let pct = percent(spent, budget);
    let state = match pct {
        p if p >= 100 => "stop",
        p if p >= 80 => "warn",
        _ => "ok",
    };
    html! {
        div class={"budget-bar " (state)} role="meter" aria-valuemin="0" aria-valuemax="100" aria-valuenow=(pct.min(100)) title={(pct) "% of budget"} {
            span style={"width:" (pct.min(100)) "%"} {}
        }
        @if state == "stop" { span.error-text { "Hard stop: work is paused" } }
        @else if state == "warn" { span.warn-text { (pct) "% used — over the 80 % warning" } }
    }
}

/// "240,000 in / 36,000 out".
pub fn tokens(input: i64, output: i64) -> String {
    format!("{} in / {} out", count(input), count(output))
}

/// Rows shown per list.
const TOP: usize = 25;

/// The API route with a list's every row.
fn api_of(column: &str) -> &'static str {
    match column {
        "Agent" => "/costs/by-agent",
        "Project" => "/costs/by-project",
        "Model" => "/costs/by-model",
        _ => "/costs/by-issue?offset=25",
    }
}

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let window = Window::month_of(Utc::now());
    let top = |rows: Vec<costs::Breakdown>| {
        let more = rows.len().saturating_sub(TOP);
        (rows.into_iter().take(TOP).collect::<Vec<_>>(), more)
    };
    let summary = costs::summary(store, cid, &window)
        .await
        .map_err(store_failure)?;
    let by_agent = costs::breakdown(store, cid, By::Agent, &window)
        .await
        .map_err(store_failure)?;
    let by_project = costs::breakdown(store, cid, By::Project, &window)
        .await
        .map_err(store_failure)?;
    let by_model = costs::breakdown(store, cid, By::Model, &window)
        .await
        .map_err(store_failure)?;
    // One more than shown tells whether there are more.
    let by_issue = costs::top(store, cid, By::Issue, &window, Some((TOP as i64 + 1, 0)))
        .await
        .map_err(store_failure)?;
    let (by_agent, by_project, by_model) = (top(by_agent), top(by_project), top(by_model));
    let by_issue = (
        by_issue.iter().take(TOP).cloned().collect::<Vec<_>>(),
        usize::from(by_issue.len() > TOP),
    );
    let spend = paperclip_store::money::thrift::get(store, cid, None, Utc::now())
        .await
        .map_err(store_failure)?;
    let mut agents = agents::list(store, cid).await.map_err(store_failure)?;
    // Those with a budget or spend first, biggest spend first.
    agents.sort_by_key(|a| {
        (
            std::cmp::Reverse(a.spent_monthly_cents),
            std::cmp::Reverse(a.budget_monthly_cents),
        )
    });
    let more_agents = agents.len().saturating_sub(TOP);
    agents.truncate(TOP);
    // The shown tasks' titles, in one query.
    let wanted = paperclip_store::thread::mentions::Wanted {
        issues: by_issue.0.iter().filter_map(|r| r.key.clone()).collect(),
        ..Default::default()
    };
    let titles = paperclip_store::thread::mentions::load(store, cid, &wanted)
        .await
        .map_err(store_failure)?
        .issues;
    let incidents = budgets::incidents(store, cid, Some("open"))
        .await
        .map_err(store_failure)?;
    let local = paperclip_store::money::local_spend::split(store, cid, &window)
        .await
        .map_err(store_failure)?;
    // A model row's key is the model and its label the provider; other rows
    // are named by their label (agent or project name).
    let table = |title: &str, column: &str, (rows, more): &(Vec<costs::Breakdown>, usize)| {
        html! {
            section {
                h2 { (title) }
                table.data {
                    thead { tr { th { (column) } th.num { "Spend" } th.num { "Tokens" } th.num { "Events" } } }
                    tbody {
                        @for r in rows { tr {
                            td { @if column == "Model" {
                                (r.key.as_deref().unwrap_or("(unknown model)")) @if let Some(p) = &r.label { span.muted { " · " (p) } }
                            } @else if column == "Task" {
                                @match (&r.label, r.key.as_ref().and_then(|k| titles.get(k))) {
                                    (Some(i), found) => a href={"/" (ctx.company.issue_prefix) "/tasks/" (i)} { span.ident { (i) } @if let Some((_, title)) = found { " " (title) } },
                                    (None, _) => span.muted { "(deleted task)" },
                                }
                            } @else { (r.label.as_deref().or(r.key.as_deref()).unwrap_or("(none)")) } }
                            td.num { (money(r.cost_cents)) @if r.unpriced_event_count > 0 { span.muted title="events without a price" { " +" (r.unpriced_event_count) " unpriced" } } }
                            td.num { (tokens(r.input_tokens, r.output_tokens)) }
                            td.num { (count(r.event_count)) }
                        } }
                        @if rows.is_empty() { tr { td colspan="4" .empty { "No spend this month." } } }
                    }
                }
                @if *more > 0 { p.muted data-more=(title) { "Top " (TOP) " shown, biggest spend first; more in " code { "GET /api/companies/" (cid) (api_of(column)) } "." } }
            }
        }
    };
    let body = html! {
        header.page-head { h1 { "Costs" } p.muted { "Month to date, from " (window.start.get(..10).unwrap_or("")) } }
        (crate::thrift::section(&spend))
        section.card {
            h2 { "Company budget" }
            p { strong data-counter="company-spend" { (money(summary.spend_cents)) } " spent"
                @if summary.budget_cents > 0 { " of " (money(summary.budget_cents)) } @else { span.muted { " · no monthly budget" } }
                @if summary.unpriced_event_count > 0 { span.muted { " · " (summary.unpriced_event_count) " unpriced events" } } }
            @if summary.budget_cents > 0 { (bar(summary.spend_cents, summary.budget_cents)) }
            form.inline-form data-api-form="budget" data-url={"/api/companies/" (cid) "/budgets"} {
                label { "Monthly budget ($)" input name="budgetDollars" type="number" min="0" step="0.01" value=(format!("{:.2}", ctx.company.budget_monthly_cents as f64 / 100.0)); }
                button type="submit" { "Save" }
            }
            @for i in &incidents { p class={"incident " (i.kind)} { strong { (i.kind) } " incident on " (i.scope_type) ": " (money(i.spend_cents)) " of " (money(i.budget_cents)) " in " (i.window_month) } }
        }
        (super::costs_local::section(&local))
        section {
            h2 { "Agent budgets" }
            table.data {
                thead { tr { th { "Agent" } th.num { "Spent" } th { "Budget" } th { "" } } }
                tbody { @for a in &agents { tr {
                    td { (a.name) } td.num { (money(a.spent_monthly_cents)) }
                    td { @if a.budget_monthly_cents > 0 { (money(a.budget_monthly_cents)) (bar(a.spent_monthly_cents, a.budget_monthly_cents)) } @else { span.muted { "none" } } }
                    td { form.inline-form data-api-form="budget" data-url={"/api/agents/" (a.id) "/budgets"} {
                        input name="budgetDollars" type="number" min="0" step="0.01" aria-label={"Budget of " (a.name)} value=(format!("{:.2}", a.budget_monthly_cents as f64 / 100.0));
                        button.small type="submit" { "Set" } } }
                } } }
            }
            @if more_agents > 0 { p.muted { (more_agents) " more agents, none spending more than those shown: set their budgets on each agent's page." } }
        }
        (table("By agent", "Agent", &by_agent))
        (table("By project", "Project", &by_project))
        (table("By model", "Model", &by_model))
        (table("By task", "Task", &by_issue))
    };
    html(layout::page(&ctx, "costs", "Costs", body))
}
