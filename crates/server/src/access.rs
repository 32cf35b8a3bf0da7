//! Loading an entity on behalf of a caller: found, and in a company the
//! caller may act on, or an error. Handlers load through these before they
//! read or change anything, so the company boundary is checked in one place.

use paperclip_core::actor::Actor;
use paperclip_core::company_secret::CompanySecret;
use paperclip_core::model::{Agent, Company, Goal, HeartbeatRun, Issue, Label, Project};

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::AppState;

pub async fn company(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Company> {
    caller.ensure_company(id)?;
    Ok(paperclip_store::org::companies::get(&app.store, id).await?)
}

/// The company exists and the caller may act on it; nothing is loaded.
pub async fn company_scope(app: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    caller.ensure_company(id)?;
    Ok(paperclip_store::org::companies::exists(&app.store, id).await?)
}

pub async fn agent(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Agent> {
    let agent = paperclip_store::org::agents::get(&app.store, id).await?;
    caller.ensure_company(&agent.company_id)?;
    Ok(agent)
}

pub async fn issue(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Issue> {
    let issue = paperclip_store::issues::get(&app.store, id).await?;
    caller.ensure_company(&issue.company_id)?;
    Ok(issue)
}

pub async fn goal(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Goal> {
    let goal = paperclip_store::org::goals::get(&app.store, id).await?;
    caller.ensure_company(&goal.company_id)?;
    Ok(goal)
}

pub async fn project(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Project> {
    let project = paperclip_store::org::projects::get(&app.store, id).await?;
    caller.ensure_company(&project.company_id)?;
    Ok(project)
}

pub async fn label(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Label> {
    let label = paperclip_store::issues::labels::get(&app.store, id).await?;
    caller.ensure_company(&label.company_id)?;
    Ok(label)
}

pub async fn run(app: &AppState, caller: &Caller, id: &str) -> ApiResult<HeartbeatRun> {
    let run = paperclip_store::runs::get(&app.store, id).await?;
    caller.ensure_company(&run.company_id)?;
    Ok(run)
}

/// Who may list, create, change, rotate and delete a company's secrets: the
/// board (upstream's `assertBoard`). Every secrets route asks here and
/// nowhere else, so company roles can replace this one function.
pub fn secrets_admin<'c>(caller: &'c Caller, company_id: &str) -> ApiResult<&'c Actor> {
    caller.ensure_company(company_id)?;
    caller.require_board()
}

/// A secret the caller may manage (see [`secrets_admin`]).
pub async fn secret(app: &AppState, caller: &Caller, id: &str) -> ApiResult<CompanySecret> {
    let secret = paperclip_store::org::secrets::get(&app.store, id).await?;
    secrets_admin(caller, &secret.company_id)?;
    Ok(secret)
}
