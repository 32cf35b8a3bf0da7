//! One goal at `/{prefix}/goals/{goalId}`: its description, level and
//! status, the goal above it and those below, its projects, and its tasks
//! (newest 50 a page, with how many there are).

use axum::extract::{Path, Query, State};
use maud::html;
use paperclip_store::{issues, org::agents, org::goals, org::projects};

use super::by_id;
use super::project::{Params, TaskPage};
use crate::fmt::pill;
use crate::{html, layout, markdown, not_found, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, id)): Path<(String, String)>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    // All the company's goals: the tree around this one comes from them.
    let all_goals = goals::list(store, cid).await.map_err(store_failure)?;
    let Some(goal) = all_goals.iter().find(|g| g.id == id) else {
        return Err(not_found(
            "No such goal",
            &format!("{} has no goal {id}.", ctx.company.name),
        ));
    };
    let filter = issues::Filter {
        goal_id: Some(goal.id.clone()),
        ..issues::Filter::default()
    };
    let tasks = TaskPage::load(&web, &ctx, filter, q.cursor.as_deref()).await?;
    let all_agents = agents::list(store, cid).await.map_err(store_failure)?;
    let names = by_id(&all_agents);
    let all_projects = projects::list(store, cid).await.map_err(store_failure)?;
    let p = &ctx.company.issue_prefix;
    let parent = goal
        .parent_id
        .as_deref()
        .and_then(|pid| all_goals.iter().find(|g| g.id == pid));
    let children: Vec<_> = all_goals
        .iter()
        .filter(|g| g.parent_id.as_deref() == Some(goal.id.as_str()))
        .collect();
    let its_projects: Vec<_> = all_projects
        .iter()
        .filter(|pr| {
            pr.goal_id.as_deref() == Some(goal.id.as_str()) || pr.goal_ids.contains(&goal.id)
        })
        .collect();
    let owner = goal.owner_agent_id.as_deref().and_then(|a| names.get(a));
    let body = html! {
        header.page-head {
            div.muted { a href={"/" (p) "/goals"} { "Goals" } " / " (goal.title) }
            h1 { (goal.title) " " (pill(&goal.status)) }
            p.muted { (goal.level) " goal" }
        }
        article.description {
            @match goal.description.as_deref().filter(|d| !d.trim().is_empty()) {
                Some(d) => (markdown::render(d)),
                None => p.muted { "No description." },
            }
        }
        dl.kv {
            dt { "Owner" } dd { @match owner { Some(a) => a href={"/" (p) "/agents/" (a.url_key)} { (a.name) }, None => span.muted { "None" } } }
            dt { "Part of" } dd { @match parent { Some(g) => a href={"/" (p) "/goals/" (g.id)} data-parent-goal { (g.title) }, None => span.muted { "A top-level goal" } } }
            dt { "Sub-goals" } dd { @for g in &children { div { a href={"/" (p) "/goals/" (g.id)} data-sub-goal { (g.title) } " " (pill(&g.status)) } } @if children.is_empty() { span.muted { "None" } } }
            dt { "Projects" } dd { @for pr in &its_projects { a href={"/" (p) "/projects/" (pr.url_key)} { (pr.name) } " " } @if its_projects.is_empty() { span.muted { "None" } } }
        }
        (tasks.render(&ctx, &names, &format!("/{p}/goals/{}", goal.id), None))
    };
    html(layout::page(&ctx, "goals", &goal.title, body))
}
