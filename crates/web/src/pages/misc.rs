//! Inbox (what needs the board), projects and goals.

use axum::extract::{Path, State};
use maud::html;
use paperclip_core::issue::IssueStatus;
use paperclip_store::{agents, approvals, goals, issues, projects, runs};

use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

/// What waits for a person: pending approvals, tasks in review or blocked,
/// and failed runs.
pub async fn inbox(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
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
    let failed = runs::list(
        store,
        cid,
        &runs::Filter {
            status: Some("failed".into()),
            limit: 10,
            ..runs::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let held = paperclip_store::wake_loops::held(store, cid)
        .await
        .map_err(store_failure)?;
    let agents = agents::list(store, cid).await.map_err(store_failure)?;
    let names = super::by_id(&agents);
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head { h1 { "Inbox" } }
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
            ul { @for a in &pending { li { a href={"/" (p) "/approvals/" (a.id)} { (a.kind.replace('_', " ")) } } } } }
        section { h2 { "Tasks waiting on you" }
            @if waiting.issues.is_empty() { p.empty { "Nothing in review or blocked." } }
            ul.tasklist { @for i in &waiting.issues { li { a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) } " " (pill(&i.status)) } } } }
        section { h2 { "Failed runs" }
            @if failed.is_empty() { p.empty { "No failures." } }
            ul { @for r in &failed { li {
                strong { (names.get(r.agent_id.as_str()).map(|a| a.name.as_str()).unwrap_or("Agent")) } " "
                span.run-error { (r.error_code.as_deref().unwrap_or("failed")) ": " (r.error.as_deref().unwrap_or("")) }
                @if let Some(a) = names.get(r.agent_id.as_str()) { " " a href={"/" (p) "/agents/" (a.url_key) "/runs/" (r.id)} { "details" } }
            } } } }
    };
    html(layout::page(&ctx, "inbox", "Inbox", body))
}

pub async fn projects(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let list = projects::list(&web.store, &ctx.company.id)
        .await
        .map_err(store_failure)?;
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head { h1 { "Projects" } }
        form.inline-form data-api-form="project" data-url={"/api/companies/" (ctx.company.id) "/projects"} {
            input name="name" placeholder="New project name" required aria-label="Project name";
            button type="submit" { "Add project" }
        }
        table.data { thead { tr { th { "Project" } th { "Status" } th { "" } } }
            tbody { @for pr in &list { tr { td { a href={"/" (p) "/projects/" (pr.url_key)} { strong { (pr.name) } } div.muted { (pr.description.as_deref().unwrap_or("")) } } td { (pill(&pr.status)) }
                td { a href={"/" (p) "/tasks?project=" (pr.id)} { "Tasks" } } } }
                @if list.is_empty() { tr { td colspan="3" .empty { "No projects yet." } } } } }
    };
    html(layout::page(&ctx, "projects", "Projects", body))
}

pub async fn goals(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let list = goals::list(&web.store, &ctx.company.id)
        .await
        .map_err(store_failure)?;
    let body = html! {
        header.page-head { h1 { "Goals" } }
        form.inline-form data-api-form="goal" data-url={"/api/companies/" (ctx.company.id) "/goals"} {
            input name="title" placeholder="New goal" required aria-label="Goal title";
            button type="submit" { "Add goal" }
        }
        table.data { thead { tr { th { "Goal" } th { "Level" } th { "Status" } } }
            tbody { @for g in &list { tr { td { a href={"/" (ctx.company.issue_prefix) "/goals/" (g.id)} { strong { (g.title) } } div.muted { (g.description.as_deref().unwrap_or("")) } } td { (g.level) } td { (pill(&g.status)) } } }
                @if list.is_empty() { tr { td colspan="3" .empty { "No goals yet." } } } } }
    };
    html(layout::page(&ctx, "goals", "Goals", body))
}
