//! Artifacts (`/{prefix}/artifacts`): the company's work products grouped by
//! the run that recorded them (newest first), each group named by its run,
//! its agent and its tasks' identifiers; products recorded outside a run
//! come last. One query loads products, tasks and runs' agents together.

use axum::extract::{Path, State};
use maud::html;
use paperclip_store::thread::work_products::Listed;

use super::by_id;
use super::task_files::card;
use crate::{html, layout, store_failure, PageResult, Web};

/// Products shown; older ones stay on their tasks.
const SHOWN: i64 = 500;

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let listed = paperclip_store::thread::work_products::list_company(&web.store, cid, SHOWN)
        .await
        .map_err(store_failure)?;
    let agents = paperclip_store::org::agents::list(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let names = by_id(&agents);
    // Groups in order of their newest product; products without a run last.
    let mut groups: Vec<(Option<&str>, Vec<&Listed>)> = Vec::new();
    for l in &listed {
        let run = l.product.created_by_run_id.as_deref();
        match groups.iter_mut().find(|(r, _)| *r == run) {
            Some((_, items)) => items.push(l),
            None => groups.push((run, vec![l])),
        }
    }
    groups.sort_by_key(|(run, _)| run.is_none());
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head {
            h1 { "Artifacts" }
            p.muted { "What agents produced — pull requests, branches, commits, previews and files — by the run that recorded it." }
        }
        @if groups.is_empty() { section.card { p.muted #no-artifacts { "No work products yet." } } }
        @for (run, items) in &groups {
            @let first = items[0];
            @let agent = first.run_agent_id.as_deref().and_then(|a| names.get(a));
            @let tasks = tasks_of(items);
            section.card.artifact-group data-run-id=(run.unwrap_or("")) {
                h2 {
                    @match (run, agent) {
                        (Some(r), Some(a)) => {
                            a href={"/" (p) "/agents/" (a.url_key) "/runs/" (r)} { "Run " code { (r.get(..8).unwrap_or(r)) } }
                            " · " (a.name)
                        }
                        (Some(r), None) => { "Run " code { (r.get(..8).unwrap_or(r)) } }
                        (None, _) => { "Recorded outside a run" }
                    }
                    @for (ident, title) in &tasks {
                        " · " a.ident href={"/" (p) "/tasks/" (ident)} title=(title) { (ident) }
                    }
                }
                div.wp-cards { @for l in items { (card(&l.product)) } }
            }
        }
    };
    html(layout::page(&ctx, "artifacts", "Artifacts", body))
}

/// The group's tasks, each once, in the order their products came.
fn tasks_of<'a>(items: &[&'a Listed]) -> Vec<(&'a str, &'a str)> {
    let mut tasks: Vec<(&str, &str)> = Vec::new();
    for l in items {
        let t = (l.identifier.as_str(), l.issue_title.as_str());
        if !tasks.contains(&t) {
            tasks.push(t);
        }
    }
    tasks
}
