//! Agents: everyone hired, with status, adapter, manager and spend, and the
//! hire dialog (`hire.rs`; it goes through approval when the company
//! requires it).

use axum::extract::{Path, State};
use maud::html;
use paperclip_store::{org::agents, views::ui};

use super::by_id;
use crate::fmt::{money, pill};
use crate::{html, layout, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn list(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let agents = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let working = ui::working_on(&web.store, cid)
        .await
        .map_err(store_failure)?;
    // By agent: a search per row was a million comparisons at 1,000 agents.
    let working: std::collections::HashMap<&str, (&str, &str)> = working
        .iter()
        .map(|(agent, ident, title)| (agent.as_str(), (ident.as_str(), title.as_str())))
        .collect();
    let quotas = paperclip_store::runs::context::quota_snapshots(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let quota: std::collections::HashMap<&str, _> =
        quotas.iter().map(|q| (q.agent_id.as_str(), q)).collect();
    let names = by_id(&agents);
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head {
            h1 { "Agents" }
            div.actions {
                button.primary type="button" data-open-dialog="hire" { "Hire an agent" }
                label.inline {
                    input type="checkbox" data-patch-company=(cid) data-field="requireBoardApprovalForNewAgents"
                        checked[ctx.company.require_board_approval_for_new_agents];
                    " New hires need board approval"
                }
            }
        }
        table.data {
            thead { tr { th { "Agent" } th { "Status" } th { "Adapter" } th { "Reports to" } th { "Working on" } th.num { "Spend / budget" } } }
            tbody {
                @for a in &agents {
                    tr data-live-agent=(a.id) {
                        td { a href={"/" (p) "/agents/" (a.url_key)} { strong { (a.name) } } div.muted { (a.title.as_deref().unwrap_or(a.role.as_str())) } }
                        td { (pill(&a.status)) @if let Some(r) = &a.pause_reason { span.muted { " (" (r) ")" } } " " (crate::thrift::usage_limit(a.usage_limited_until.as_deref()))
                            @if let Some(q) = quota.get(a.id.as_str()) { div.muted { (super::task_context::windows_line(q, 2)) } } }
                        td { code { (a.adapter_type) } }
                        td { @match a.reports_to.as_deref().and_then(|id| names.get(id)) { Some(m) => (m.name), None => span.muted { "—" } } }
                        td { @match working.get(a.id.as_str()) {
                            Some((ident, title)) => a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } " " (title) },
                            None => span.muted { "—" } } }
                        td.num { (money(a.spent_monthly_cents)) " / " @if a.budget_monthly_cents > 0 { (money(a.budget_monthly_cents)) } @else { "—" } }
                    }
                }
                @if agents.is_empty() { tr { td colspan="6" .empty { "No agents yet." } } }
            }
        }
    };
    let hire = super::hire::dialog(&ctx, &agents);
    html(layout::page_with(&ctx, "agents", "Agents", body, hire))
}
