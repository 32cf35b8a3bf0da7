//! Everything an export carries, read through the tables' own reads.

use paperclip_core::model::{Agent, Comment, Company, Goal, Issue, Project};
use paperclip_core::routine::{Routine, RoutineTrigger};

use crate::thread::comments::Order;
use crate::{Error, Result, Store};

/// A bound on what one export reads: past it the export is refused (422)
/// rather than answered with a body the importer's 1 MiB bound refuses.
pub const MAX_TASKS: i64 = 2_000;
const MAX_COMMENTS: i64 = 1_000;

pub struct Snapshot {
    pub company: Company,
    pub agents: Vec<Agent>,
    pub goals: Vec<Goal>,
    pub projects: Vec<Project>,
    pub routines: Vec<(Routine, Vec<RoutineTrigger>)>,
    pub issues: Vec<(Issue, Vec<Comment>)>,
    pub skills: Vec<crate::org::skills::Skill>,
}

pub async fn snapshot(store: &Store, company_id: &str, with_issues: bool) -> Result<Snapshot> {
    let company = crate::org::companies::get(store, company_id).await?;
    let agents = crate::org::agents::list(store, company_id)
        .await?
        .into_iter()
        .filter(|a| a.status.as_str() != "terminated")
        .collect();
    let goals = crate::org::goals::list(store, company_id).await?;
    let projects = crate::org::projects::list(store, company_id).await?;
    let skills = crate::org::skills::list(store, company_id).await?;
    let mut routines = Vec::new();
    let mut issues = Vec::new();
    if with_issues {
        for r in crate::routines::table::list(store, company_id, None)
            .await?
            .into_iter()
            .rev()
        {
            let triggers = crate::routines::trigger_table::list(store, &r.id).await?;
            routines.push((r, triggers));
        }
        let ids: Vec<(String,)> = crate::engine::db::query_as(
            "SELECT id FROM issues WHERE company_id = $1 ORDER BY issue_number LIMIT $2",
        )
        .bind(company_id)
        .bind(MAX_TASKS + 1)
        .fetch_all(store.pool())
        .await?;
        if ids.len() as i64 > MAX_TASKS {
            return Err(Error::rule(format!(
                "The company has more than {MAX_TASKS} tasks: export it without tasks"
            )));
        }
        for (id,) in ids {
            let issue = crate::issues::table::get(store, &id).await?;
            let comments =
                crate::thread::comments::list(store, &id, None, Order::Asc, MAX_COMMENTS).await?;
            issues.push((issue, comments));
        }
    }
    Ok(Snapshot {
        company,
        agents,
        goals,
        projects,
        routines,
        issues,
        skills,
    })
}
