//! Projects and goals.

use axum::extract::{Path, State};
use maud::html;
use paperclip_store::{org::goals, org::projects};

use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

#[paperclip_macros::handler]
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
            input name="cwd" placeholder="Repository path (optional)" aria-label="Repository path (optional): a local git repository" maxlength="4096" autocomplete="off";
            button type="submit" { "Add project" }
            p.form-error role="alert" hidden {}
        }
        table.data { thead { tr { th { "Project" } th { "Status" } th { "" } } }
            tbody { @for pr in &list { tr { td { a href={"/" (p) "/projects/" (pr.url_key)} { strong { (pr.name) } } div.muted { (pr.description.as_deref().unwrap_or("")) } } td { (pill(&pr.status)) }
                td { a href={"/" (p) "/tasks?project=" (pr.id)} { "Tasks" } } } }
                @if list.is_empty() { tr { td colspan="3" .empty { "No projects yet." } } } } }
    };
    html(layout::page(&ctx, "projects", "Projects", body))
}

#[paperclip_macros::handler]
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
