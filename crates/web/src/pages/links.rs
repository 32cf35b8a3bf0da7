//! The original Paperclip's board paths, which its agents write into
//! comments (`/ACM/issues/ACM-12`, `/ACM/agents/coder/dashboard`,
//! `/ACM/projects/website/issues`), resolved to this board's pages; and the
//! lookups by url key or id the detail pages share. Something a link names
//! that is not there is a 404 page saying so.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Redirect, Response};
use paperclip_core::model::{Agent, Project};
use paperclip_store::{issues, org::agents, org::projects};

use crate::{not_found, store_failure, Ctx, PageResult, Web};

/// The company's agent whose url key (any case) or id is `key`, with all
/// the company's agents (pages name other agents from them).
pub(crate) async fn agent_by_key(
    web: &Web,
    ctx: &Ctx,
    key: &str,
) -> Result<(Agent, Vec<Agent>), Response> {
    let all = agents::list(&web.store, &ctx.company.id)
        .await
        .map_err(store_failure)?;
    match all
        .iter()
        .find(|a| a.url_key.eq_ignore_ascii_case(key) || a.id == key)
        .cloned()
    {
        Some(agent) => Ok((agent, all)),
        None => Err(not_found(
            "No such agent",
            &format!("{} has no agent {key}.", ctx.company.name),
        )),
    }
}

/// The company's project whose url key (any case) or id is `key`.
pub(crate) async fn project_by_key(web: &Web, ctx: &Ctx, key: &str) -> Result<Project, Response> {
    let all = projects::list(&web.store, &ctx.company.id)
        .await
        .map_err(store_failure)?;
    all.into_iter()
        .find(|p| p.url_key.eq_ignore_ascii_case(key) || p.id == key)
        .ok_or_else(|| {
            not_found(
                "No such project",
                &format!("{} has no project {key}.", ctx.company.name),
            )
        })
}

/// `/{prefix}/issues`: the task list, with its filters.
#[paperclip_macros::handler]
pub async fn issues(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    RawQuery(query): RawQuery,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let p = &ctx.company.issue_prefix;
    let to = match query.filter(|q| !q.is_empty()) {
        Some(q) => format!("/{p}/tasks?{q}"),
        None => format!("/{p}/tasks"),
    };
    Ok(Redirect::to(&to).into_response())
}

/// `/{prefix}/issues/{ACM-12 | acm-12 | task id}`: the task's page.
pub async fn issue(
    State(web): State<Web>,
    Path((prefix, key)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    match issues::get(&web.store, key.trim()).await {
        Ok(issue) if issue.company_id == ctx.company.id => Ok(Redirect::to(&format!(
            "/{}/tasks/{}",
            ctx.company.issue_prefix, issue.identifier
        ))
        .into_response()),
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => Err(not_found(
            "No such task",
            &format!("{key} is not a task of {}.", ctx.company.name),
        )),
        Err(e) => Err(store_failure(e)),
    }
}

/// `/{prefix}/agents/{key}/{tab}` (dashboard, configuration, ...): the
/// agent's page, which has all of them on one page.
#[paperclip_macros::handler]
pub async fn agent_tab(
    State(web): State<Web>,
    Path((prefix, key, _tab)): Path<(String, String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let (agent, _) = agent_by_key(&web, &ctx, &key).await?;
    Ok(Redirect::to(&format!(
        "/{}/agents/{}",
        ctx.company.issue_prefix, agent.url_key
    ))
    .into_response())
}

/// `/{prefix}/projects/{key}/{tab}`: its tasks for `issues`, else the
/// project's page (overview, ...).
#[paperclip_macros::handler]
pub async fn project_tab(
    State(web): State<Web>,
    Path((prefix, key, tab)): Path<(String, String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let project = project_by_key(&web, &ctx, &key).await?;
    let p = &ctx.company.issue_prefix;
    let to = if tab == "issues" {
        format!("/{p}/tasks?project={}", project.id)
    } else {
        format!("/{p}/projects/{}", project.url_key)
    };
    Ok(Redirect::to(&to).into_response())
}
