//! Org chart: the reporting tree drawn as boxes joined by connector lines
//! (pure CSS), each with live status, role and title, linking to the agent.

use std::collections::HashMap;

use axum::extract::{Path, State};
use maud::{html, Markup};
use paperclip_core::model::OrgNode;
use paperclip_store::agents;

use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

fn node(n: &OrgNode, keys: &HashMap<String, String>, p: &str) -> Markup {
    let key = keys.get(&n.id).map(String::as_str).unwrap_or(&n.id);
    html! {
        li {
            a.org-node href={"/" (p) "/agents/" (key)} data-live-agent=(n.id) {
                strong { (n.name) }
                span.muted { (n.title.as_deref().unwrap_or(n.role.as_str())) }
                (pill(&n.status))
            }
            @if !n.reports.is_empty() {
                ul { @for r in &n.reports { (node(r, keys, p)) } }
            }
        }
    }
}

pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let tree = agents::org_tree(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let keys: HashMap<String, String> = agents::list(&web.store, cid)
        .await
        .map_err(store_failure)?
        .into_iter()
        .map(|a| (a.id, a.url_key))
        .collect();
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head { h1 { "Org chart" } }
        @if tree.is_empty() { p.empty { "No agents yet." } }
        div.org { ul.org-root { @for n in &tree { (node(n, &keys, p)) } } }
    };
    html(layout::page(&ctx, "org", "Org chart", body))
}
