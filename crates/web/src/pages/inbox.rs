//! Inbox: what waits for the board. Agents' questions come first (each
//! links to its card in the task's thread), then failed runs, one item per
//! agent and task (the newest failure, repeats folded in), each with its
//! cause, when it happened, links to the task and the run, Retry and
//! Dismiss; a later success on the task clears it. Then approvals, tasks in
//! review or blocked, and agents holding each other in a wake loop. A
//! "Dismissed" tab lists what the person put away and can bring back.

use axum::extract::{Path, Query, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::approval::ApprovalType;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{Agent, Approval};
use paperclip_store::views::inbox::{self, FailedRun};
use paperclip_store::{approvals, issues, org::agents};
use serde::Deserialize;
use serde_json::json;

use crate::fmt::{pill, time};
use crate::{html, layout, store_failure, PageResult, Web};

#[derive(Deserialize, Default)]
pub struct Params {
    tab: Option<String>,
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    Query(params): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let dismissed_tab = params.tab.as_deref() == Some("dismissed");
    let failures = inbox::failed_runs(
        store,
        cid,
        crate::viewer::current().user_id(),
        dismissed_tab,
    )
    .await
    .map_err(store_failure)?;
    let agents = agents::list(store, cid).await.map_err(store_failure)?;
    let names = super::by_id(&agents);
    let p = &ctx.company.issue_prefix;
    let now = Utc::now();
    let tabs = html! {
        nav.tabs aria-label="Inbox" {
            a.tab.active[!dismissed_tab] href={"/" (p) "/inbox"} aria-current=[(!dismissed_tab).then_some("page")] { "Needs you" }
            a.tab.active[dismissed_tab] href={"/" (p) "/inbox?tab=dismissed"} aria-current=[dismissed_tab.then_some("page")] { "Dismissed" }
        }
    };
    if dismissed_tab {
        let body = html! {
            header.page-head { h1 { "Inbox" } }
            (tabs)
            section { h2 { "Dismissed failures" }
                @if failures.is_empty() { p.empty { "Nothing dismissed in the last " (inbox::WINDOW_DAYS) " days." } }
                ul.inbox-items { @for f in &failures { (failure(f, p, cid, &names, now, true)) } }
            }
        };
        return html(layout::page(&ctx, "inbox", "Inbox", body));
    }
    let pending = approvals::list(store, cid, Some("pending"))
        .await
        .map_err(store_failure)?;
    let waiting = issues::list(
        store,
        cid,
        &issues::Filter {
            statuses: vec![IssueStatus::InReview, IssueStatus::Blocked],
            limit: 50,
            ..issues::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let asked = paperclip_store::thread::interactions::pending_in_company(store, cid, 50)
        .await
        .map_err(store_failure)?;
    let held = paperclip_store::wakes::loops::held(store, cid)
        .await
        .map_err(store_failure)?;
    let decisions = super::inbox_decisions::section(store, cid, p)
        .await
        .map_err(store_failure)?;
    let mine = super::inbox_mine::section(store, cid, crate::viewer::current().user_id(), p)
        .await
        .map_err(store_failure)?;
    let body = html! {
        header.page-head { h1 { "Inbox" } }
        (tabs)
        section data-asked { h2 { "Questions from agents" }
            @if asked.is_empty() { p.empty { "No agent is waiting on an answer." } }
            ul.inbox-items { @for (card, ident, title) in &asked { li.inbox-item data-interaction=(card.id) data-at=(card.created_at) {
                div {
                    strong { (card.created_by_agent_id.as_deref().and_then(|a| names.get(a)).map_or("An agent", |a| a.name.as_str())) }
                    " asks (" (super::cards::kind_label(card).to_lowercase()) ") on "
                    a href={"/" (p) "/tasks/" (ident) "#interaction-" (card.id)} { span.ident { (ident) } " " (title) }
                    " " span.muted { (time(&card.created_at, now)) }
                }
                p { (super::cards::headline(card)) }
                div.actions { a.button.small href={"/" (p) "/tasks/" (ident) "#interaction-" (card.id)} { "Answer" } }
            } } }
        }
        (decisions)
        (mine)
        section data-failures { h2 { "Failed runs" }
            @if failures.is_empty() { p.empty { "No failures waiting for you." } }
            ul.inbox-items { @for f in &failures { (failure(f, p, cid, &names, now, false)) } }
        }
        @if !held.is_empty() {
            section data-held-loops { h2 { "Agents waking each other" }
                p.muted { "Agents woke each other on these tasks again and again without progress; further wakes between them are held until you step in." }
                ul.tasklist { @for h in &held { li data-held-issue=(h.identifier) {
                    a href={"/" (p) "/tasks/" (h.identifier)} { span.ident { (h.identifier) } " " (h.title) }
                    span.muted { " · " (h.wakes) " wakes in " (h.window_minutes) " min" @if h.held_wakes > 0 { ", " (h.held_wakes) " held" } }
                    " " button.small type="button" data-action="POST" data-url={"/api/issues/" (h.issue_id) "/wake-loop/release"} data-body="{}" data-done="Released" { "Let them carry on" }
                } } }
            }
        }
        section { h2 { "Approvals" }
            @if pending.is_empty() { p.empty { "None pending." } }
            ul.inbox-items { @for a in &pending { (approval_row(a, p, &names, now)) } } }
        section { h2 { "Tasks waiting on you" }
            @if waiting.issues.is_empty() { p.empty { "Nothing in review or blocked." } }
            ul.tasklist { @for i in &waiting.issues { li { a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) } " " (pill(&i.status)) } } } }
    };
    html(layout::page(&ctx, "inbox", "Inbox", body))
}

/// One failure: who failed on which task, why and when, then what to do.
fn failure(
    f: &FailedRun,
    p: &str,
    cid: &str,
    names: &std::collections::HashMap<&str, &Agent>,
    now: chrono::DateTime<Utc>,
    dismissed: bool,
) -> Markup {
    let agent = names.get(f.agent_id.as_str());
    let agent_name = agent.map(|a| a.name.as_str()).unwrap_or("An agent");
    let agent_key = agent.map(|a| a.url_key.as_str()).unwrap_or(&f.agent_id);
    let key = format!("run:{}", f.run_id);
    let verb = if f.status == paperclip_core::heartbeat::RunStatus::TimedOut {
        "timed out"
    } else {
        "failed"
    };
    html! {
        li.inbox-item data-failed-run=(f.run_id) data-at=(f.finished_at.as_deref().unwrap_or(&f.created_at)) {
            div {
                strong { (agent_name) } " " (verb)
                @match (&f.identifier, &f.title) {
                    (Some(ident), Some(title)) => { " on " a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } " " (title) } }
                    _ => { " on a heartbeat with no task" }
                }
                " " span.muted { (time(f.finished_at.as_deref().unwrap_or(&f.created_at), now)) }
                @if f.earlier > 0 { " " span.muted title="Earlier failures of the same agent on the same task" { "(+" (f.earlier) " earlier)" } }
            }
            p.run-error { strong { (f.error_code.as_deref().unwrap_or("error")) ": " } (f.error.as_deref().unwrap_or("no message")) }
            div.actions {
                a.button.small href={"/" (p) "/agents/" (agent_key) "/runs/" (f.run_id)} { "Open run" }
                @if dismissed {
                    button.small type="button" data-action="DELETE" data-url={"/api/companies/" (cid) "/inbox-dismissals/" (key)} data-done="Back in the inbox" { "Restore" }
                } @else {
                    button.small type="button" data-action="POST" data-url={"/api/agents/" (f.agent_id) "/wakeup"}
                        data-body=(json!({ "failedRunId": f.run_id, "reason": "retry_failed_run" })) data-done="Retry queued" { "Retry" }
                    button.small type="button" data-dismiss=(key) data-action="POST" data-url={"/api/companies/" (cid) "/inbox-dismissals"}
                        data-body=(json!({ "itemKey": key })) data-done="Dismissed" { "Dismiss" }
                }
            }
        }
    }
}

/// One pending approval in words. A hire names the agent, its adapter and
/// its manager, and is decided here; other requests open their page.
fn approval_row(
    a: &Approval,
    p: &str,
    names: &std::collections::HashMap<&str, &Agent>,
    now: chrono::DateTime<Utc>,
) -> Markup {
    let payload = a.redacted_payload();
    let text = |k: &str| {
        payload
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    let hire = a.kind == ApprovalType::HireAgent;
    let agent = text("agentId").and_then(|id| names.get(id));
    let name = agent
        .map(|x| x.name.as_str())
        .or(text("name"))
        .unwrap_or("an agent");
    let mut about = Vec::new();
    if let Some(kind) = text("adapterType") {
        about.push(paperclip_core::words::adapter(kind).to_string());
    }
    if let Some(boss) = text("reportsTo").and_then(|id| names.get(id)) {
        about.push(format!("reports to {}", boss.name));
    }
    let requester = a
        .requested_by_agent_id
        .as_deref()
        .and_then(|id| names.get(id))
        .map_or("the board", |x| x.name.as_str());
    html! {
        li.inbox-item data-approval=(a.id) data-at=(a.created_at) {
            div {
                a href={"/" (p) "/approvals/" (a.id)} { strong {
                    @if hire { "Hire " (name) } @else { (super::approval::headline(a, &payload)) }
                } }
                @if hire && !about.is_empty() { " (" (about.join(", ")) ")" }
                " " span.muted { "requested by " (requester) " " (time(&a.created_at, now)) }
            }
            div.actions {
                @if hire {
                    button.small.primary type="button" data-action="POST" data-url={"/api/approvals/" (a.id) "/approve"} data-body="{}" data-done={(name) " is hired"} { "Approve" }
                    button.small.danger type="button" data-action="POST" data-url={"/api/approvals/" (a.id) "/reject"} data-body="{}" data-confirm={"Reject the hire of " (name) "?"} data-done="Hire rejected" { "Reject" }
                }
                a.button.small href={"/" (p) "/approvals/" (a.id)} { @if hire { "Details" } @else { "Review" } }
            }
        }
    }
}
