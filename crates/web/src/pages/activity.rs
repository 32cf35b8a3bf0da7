//! Activity: the audit stream, newest first, filterable by entity, actor and action.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::model::{ActivityEntry, Agent};
use paperclip_store::{activity, agents};
use serde::Deserialize;

use super::by_id;
use crate::fmt::time;
use crate::{html, layout, store_failure, PageResult, Web};

#[derive(Deserialize, Default)]
pub struct Params {
    entity: Option<String>,
    actor: Option<String>,
    action: Option<String>,
}

/// "Coder checked out ACM-3": actor, what happened, and a link to the entity
/// named by identifier (or name), never by id.
pub fn describe(e: &ActivityEntry, names: &HashMap<&str, &Agent>, prefix: &str) -> Markup {
    let actor = match e.actor_type.as_str() {
        "agent" => names
            .get(e.actor_id.as_str())
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "An agent".into()),
        "system" => "Paperclip".into(),
        _ => "Board".into(),
    };
    let verb = e
        .action
        .rsplit('.')
        .next()
        .unwrap_or(&e.action)
        .replace('_', " ");
    let identifier = e.details.get("identifier").and_then(|v| v.as_str());
    html! {
        span.actor { (actor) } " " span.action title=(e.action) { (verb) } " "
        @match (e.entity_type.as_str(), identifier) {
            (_, Some(ident)) => a href={"/" (prefix) "/tasks/" (ident)} { span.ident { (ident) } },
            ("agent", _) => @match names.get(e.entity_id.as_str()) {
                Some(a) => a href={"/" (prefix) "/agents/" (a.url_key)} { (a.name) },
                None => span.muted { "an agent" },
            },
            (kind, _) => span.muted { (kind.replace('_', " ")) },
        }
    }
}

pub async fn page(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let blank = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let filter = activity::Filter {
        entity_type: blank(&q.entity),
        actor_type: blank(&q.actor),
        limit: 200,
        ..activity::Filter::default()
    };
    let mut entries = activity::list(&web.store, cid, &filter)
        .await
        .map_err(store_failure)?;
    if let Some(action) = blank(&q.action) {
        entries.retain(|e| e.action.contains(&action));
    }
    let agents = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let names = by_id(&agents);
    let now = Utc::now();
    let p = &ctx.company.issue_prefix;
    let sel = |v: &Option<String>, x: &str| v.as_deref() == Some(x);
    let body = html! {
        header.page-head { h1 { "Activity" } }
        form.filters method="get" {
            select name="entity" aria-label="Entity" {
                option value="" { "All entities" }
                @for k in ["issue", "agent", "approval", "company", "project", "goal", "heartbeat_run", "budget"] {
                    option value=(k) selected[sel(&q.entity, k)] { (k.replace('_', " ")) }
                }
            }
            select name="actor" aria-label="Actor" {
                option value="" { "Anyone" }
                @for k in ["user", "agent", "system"] { option value=(k) selected[sel(&q.actor, k)] { (k) } }
            }
            input name="action" placeholder="Action contains…" value=[q.action.as_deref()];
            button type="submit" { "Filter" }
        }
        table.data {
            thead { tr { th { "What" } th { "Action" } th { "When" } } }
            tbody {
                @for e in &entries {
                    tr { td { (describe(e, &names, p)) } td.muted { code { (e.action) } } td { (time(&e.created_at, now)) } }
                }
                @if entries.is_empty() { tr { td colspan="3" .empty { "Nothing matches." } } }
            }
        }
    };
    html(layout::page(&ctx, "activity", "Activity", body))
}
