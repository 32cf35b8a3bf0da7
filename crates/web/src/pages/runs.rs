//! An agent's runs, newest first, 50 a page (`?before=<runId>` continues
//! after a page's last run): status, task, start, duration and cost, each
//! row opening the run's page.

use axum::extract::{Path, Query, State};
use chrono::Utc;
use paperclip_store::views::detail;
use serde::Deserialize;

use super::links::agent_by_key;
use super::run::when_and_how_long;
use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

const PAGE: i64 = 50;

#[derive(Deserialize, Default)]
pub struct Params {
    /// Runs older than this one: the next page.
    before: Option<String>,
}

#[paperclip_macros::handler]
pub async fn list(
    State(web): State<Web>,
    Path((prefix, key)): Path<(String, String)>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let (agent, _) = agent_by_key(&web, &ctx, &key).await?;
    let cid = &ctx.company.id;
    let before = q.before.as_deref().filter(|b| !b.is_empty());
    // One more than a page says whether another page follows.
    let mut list = detail::agent_runs(&web.store, cid, &agent.id, before, PAGE + 1)
        .await
        .map_err(store_failure)?;
    let more = list.len() as i64 > PAGE;
    list.truncate(PAGE as usize);
    let task_ids: Vec<&str> = list.iter().filter_map(|r| r.issue_id.as_deref()).collect();
    let idents = detail::identifiers(&web.store, cid, &task_ids)
        .await
        .map_err(store_failure)?;
    let now = Utc::now();
    let p = &ctx.company.issue_prefix;
    let base = format!("/{p}/agents/{}", agent.url_key);
    let body = maud::html! {
        header.page-head {
            div.muted { a href={"/" (p) "/agents"} { "Agents" } " / " a href=(base) { (agent.name) } " / Runs" }
            h1 { "Runs of " (agent.name) }
        }
        table.data.runs-list {
            thead { tr { th { "Run" } th { "Task" } th { "Outcome" } th { "Started · took" } th { "Cost" } } }
            tbody {
                @for r in &list {
                    tr data-run-status=(r.status) {
                        td { a href={(base) "/runs/" (r.id)} { (pill(&r.status)) " " span.muted { "open" } } }
                        td { @match r.issue_id.as_deref().and_then(|i| idents.get(i)) {
                            Some(ident) => a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } },
                            None => span.muted { "—" } } }
                        td { (super::thread::outcome_cell(r)) }
                        td { (when_and_how_long(r, now)) }
                        td { (r.usage_json.as_ref().and_then(crate::fmt::run_usage).unwrap_or_default()) }
                    }
                }
                @if list.is_empty() { tr { td colspan="5" .empty { @if before.is_some() { "No older runs." } @else { "No runs yet." } } } }
            }
        }
        nav.pager {
            @if before.is_some() { a href={(base) "/runs"} { "Newest runs" } " " }
            @if let Some(last) = list.last().filter(|_| more) { a href={(base) "/runs?before=" (last.id)} rel="next" { "Older runs →" } }
        }
    };
    let title = format!("Runs of {}", agent.name);
    html(layout::page(&ctx, "agents", &title, body))
}
