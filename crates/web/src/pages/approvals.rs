//! Approvals: pending first with approve / reject / request revision, then
//! history. Requests (e.g. a proposed hire) read in words, as on the
//! approval's own page: labels, names for ids, dollars, nothing empty.

use std::collections::HashMap;

use axum::extract::{Path, State};
use chrono::Utc;
use maud::html;
use paperclip_store::{approvals, org::agents, views::detail};
use serde_json::Value;

use super::{approval, by_id};
use crate::fmt::{pill, time};
use crate::{html, layout, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let all = approvals::list(&web.store, cid, None)
        .await
        .map_err(store_failure)?;
    let agents = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let names = by_id(&agents);
    let now = Utc::now();
    let payloads: HashMap<&str, Value> = all
        .iter()
        .map(|a| (a.id.as_str(), a.redacted_payload()))
        .collect();
    // Task ids the pending requests mention, named in one lookup.
    let mut strings = Vec::new();
    for p in payloads.values() {
        approval::collect_strings(p, &mut strings, 0);
    }
    let idents = detail::identifiers(&web.store, cid, &strings)
        .await
        .map_err(store_failure)?;
    let names_of = approval::Names {
        agents: &names,
        tasks: &idents,
        prefix: &ctx.company.issue_prefix,
    };
    let (pending, done): (Vec<_>, Vec<_>) = all.iter().partition(|a| a.status.is_open());
    let who = |a: &paperclip_core::model::Approval| -> String {
        match a
            .requested_by_agent_id
            .as_deref()
            .and_then(|id| names.get(id))
        {
            Some(agent) => agent.name.clone(),
            None => "Board".into(),
        }
    };
    let body = html! {
        header.page-head { h1 { "Approvals" } }
        section {
            h2 { "Pending" }
            @if pending.is_empty() { p.empty { "Nothing waits for the board." } }
            @for a in &pending {
                article.card.approval data-approval-id=(a.id) {
                    header { a href={"/" (ctx.company.issue_prefix) "/approvals/" (a.id)} { strong { (approval::headline(a, &payloads[a.id.as_str()])) } } " " (pill(&a.status)) span.muted { " requested by " (who(a)) " " (time(&a.created_at, now)) } }
                    (approval::fields(&payloads[a.id.as_str()], &names_of, 0))
                    (approval::decide_form(&a.id))
                }
            }
        }
        section {
            h2 { "History" }
            table.data {
                thead { tr { th { "Request" } th { "Status" } th { "Note" } th { "Decided" } } }
                tbody { @for a in &done { tr {
                    td { a href={"/" (ctx.company.issue_prefix) "/approvals/" (a.id)} { (approval::headline(a, &payloads[a.id.as_str()])) } span.muted { " by " (who(a)) } }
                    td { (pill(&a.status)) } td { (a.decision_note.as_deref().unwrap_or("")) }
                    td { @if let Some(t) = &a.decided_at { (time(t, now)) } }
                } } @if done.is_empty() { tr { td colspan="4" .empty { "No decisions yet." } } } }
            }
        }
    };
    html(layout::page(&ctx, "approvals", "Approvals", body))
}
