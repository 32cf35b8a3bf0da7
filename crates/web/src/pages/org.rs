//! Org chart: the reporting tree drawn as boxes joined by connector lines
//! (pure CSS), each with live status, role and title, linking to the agent.
//! Every agent of the company appears once: one tree per top-level agent
//! (drawn apart, since they share no manager), and an agent whose manager is
//! gone heads a tree of its own, marked so.

use std::collections::{HashMap, HashSet};

use axum::extract::{Path, State};
use maud::{html, Markup};
use paperclip_core::model::Agent;
use paperclip_store::org::agents;

use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

/// Deeper than any real org; stops a corrupt chain from recursing forever.
const MAX_DEPTH: usize = 64;

struct Tree<'a> {
    reports: HashMap<&'a str, Vec<&'a Agent>>,
    /// Agents already drawn: each appears once even if the data loops.
    drawn: HashSet<&'a str>,
}

impl<'a> Tree<'a> {
    fn node(&mut self, a: &'a Agent, p: &str, orphan: bool, depth: usize) -> Markup {
        self.drawn.insert(&a.id);
        let reports = match depth < MAX_DEPTH {
            true => self.reports.get(a.id.as_str()).cloned().unwrap_or_default(),
            false => Vec::new(),
        };
        let mut children = Vec::new();
        for r in reports {
            if !self.drawn.contains(r.id.as_str()) {
                children.push(self.node(r, p, false, depth + 1));
            }
        }
        html! {
            li {
                a.org-node href={"/" (p) "/agents/" (a.url_key)} data-live-agent=(a.id) data-org-agent=(a.name) {
                    strong { (a.name) }
                    span.muted { (a.title.as_deref().unwrap_or(a.role.as_str())) }
                    (pill(&a.status))
                    @if orphan { span.muted.hint { "manager no longer in the company" } }
                }
                @if !children.is_empty() {
                    ul { @for c in children { (c) } }
                }
            }
        }
    }
}

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let all = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let ids: HashSet<&str> = all.iter().map(|a| a.id.as_str()).collect();
    let mut tree = Tree {
        reports: HashMap::new(),
        drawn: HashSet::new(),
    };
    for a in &all {
        if let Some(m) = a.reports_to.as_deref().filter(|m| ids.contains(m)) {
            tree.reports.entry(m).or_default().push(a);
        }
    }
    let p = &ctx.company.issue_prefix;
    let mut roots: Vec<Markup> = Vec::new();
    for a in &all {
        match a.reports_to.as_deref() {
            None => roots.push(tree.node(a, p, false, 0)),
            Some(m) if !ids.contains(m) => roots.push(tree.node(a, p, true, 0)),
            Some(_) => {}
        }
    }
    // Anyone not reached from a root reports in a loop: drawn from there.
    for a in &all {
        if !tree.drawn.contains(a.id.as_str()) {
            roots.push(tree.node(a, p, false, 0));
        }
    }
    let body = html! {
        header.page-head { h1 { "Org chart" } }
        @if all.is_empty() { p.empty { "No agents yet." } }
        div.org {
            @for root in roots { ul.org-root data-org-root { (root) } }
        }
    };
    html(layout::page(&ctx, "org", "Org chart", body))
}
