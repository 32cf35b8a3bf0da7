//! Read-only lookups for the board's detail pages (a run, an agent's run
//! history): each one statement with a LIMIT, found by index.

use std::collections::HashMap;

use paperclip_core::model::HeartbeatRun;

use crate::engine::row::RowExt;
use crate::{Result, Store};

/// An agent's runs newest first, `limit` of them, older than the run
/// `before` when given (the previous page's last run): walks the
/// (company, agent, id) index from a point instead of counting an offset.
pub async fn agent_runs(
    store: &Store,
    company_id: &str,
    agent_id: &str,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<HeartbeatRun>> {
    let rows = match before {
        Some(before) => {
            crate::engine::db::query(
                "SELECT * FROM heartbeat_runs WHERE company_id = $1 AND agent_id = $2 \
                 AND id < $3 ORDER BY id DESC LIMIT $4",
            )
            .bind(company_id)
            .bind(agent_id)
            .bind(before)
            .bind(limit)
            .fetch_all(store.pool())
            .await?
        }
        None => {
            crate::engine::db::query(
                "SELECT * FROM heartbeat_runs WHERE company_id = $1 AND agent_id = $2 \
                 ORDER BY id DESC LIMIT $3",
            )
            .bind(company_id)
            .bind(agent_id)
            .bind(limit)
            .fetch_all(store.pool())
            .await?
        }
    };
    rows.iter().map(crate::runs::table::map).collect()
}

/// Identifiers (`ACM-12`) of the company's tasks among `ids`, by id: one
/// statement for a whole page of runs or approvals, however many tasks.
pub async fn identifiers(
    store: &Store,
    company_id: &str,
    ids: &[&str],
) -> Result<HashMap<String, String>> {
    Ok(summaries(store, company_id, ids)
        .await?
        .into_iter()
        .map(|s| (s.id, s.identifier))
        .collect())
}

/// A task as a list of them names it.
#[derive(Debug, Clone)]
pub struct IssueSummary {
    pub id: String,
    pub identifier: String,
    pub title: String,
    pub status: paperclip_core::issue::IssueStatus,
    pub priority: paperclip_core::issue::IssuePriority,
}

/// The company's tasks with these ids, in the order given (ids of other
/// companies' tasks, or of tasks gone, are left out): one query however
/// many.
pub async fn summaries(store: &Store, company_id: &str, ids: &[&str]) -> Result<Vec<IssueSummary>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // The company is compared as an expression so the ids drive the lookup
    // by primary key: with `company_id = $1` SQLite walked the company's
    // index instead (1.5 s per page at a million tasks).
    let sql = format!(
        "SELECT id, identifier, title, status, priority FROM issues WHERE id IN {} \
         AND company_id || '' = $1",
        crate::engine::sql::json_values(store.backend(), "$2", crate::engine::sql::ListOf::Ids)
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(crate::engine::sql::json_array(ids.iter()))
        .fetch_all(store.pool())
        .await?;
    let mut found: HashMap<String, IssueSummary> = HashMap::with_capacity(rows.len());
    for r in &rows {
        let summary = IssueSummary {
            id: r.text("id")?,
            identifier: r.text("identifier")?,
            title: r.text("title")?,
            status: r.stored("status")?,
            priority: r.stored("priority")?,
        };
        found.insert(summary.id.clone(), summary);
    }
    Ok(ids.iter().filter_map(|id| found.remove(*id)).collect())
}

/// A task linked to an approval, as a person reads it.
pub struct LinkedTask {
    pub identifier: String,
    pub title: String,
    pub status: paperclip_core::issue::IssueStatus,
}

/// The tasks linked to an approval, in one statement.
pub async fn approval_tasks(store: &Store, approval_id: &str) -> Result<Vec<LinkedTask>> {
    let rows = crate::engine::db::query(
        "SELECT i.identifier, i.title, i.status FROM issue_approvals l \
         JOIN issues i ON i.id = l.issue_id WHERE l.approval_id = $1 \
         ORDER BY i.issue_number DESC LIMIT 200",
    )
    .bind(approval_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(LinkedTask {
                identifier: r.text("identifier")?,
                title: r.text("title")?,
                status: r.stored("status")?,
            })
        })
        .collect()
}

/// Runs that retried `run_id` (newest last): looked for among the next 200
/// runs of its agent, by the (company, agent, id) index, so an old run costs
/// no more than a new one.
pub async fn retries_of(
    store: &Store,
    company_id: &str,
    agent_id: &str,
    run_id: &str,
) -> Result<Vec<(String, String)>> {
    let rows = crate::engine::db::query(
        "SELECT id, status FROM (SELECT id, status, retry_of_run_id FROM heartbeat_runs \
         WHERE company_id = $1 AND agent_id = $2 AND id > $3 ORDER BY id LIMIT 200) AS later \
         WHERE retry_of_run_id = $3 ORDER BY id",
    )
    .bind(company_id)
    .bind(agent_id)
    .bind(run_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.text("id")?, r.text("status")?)))
        .collect()
}
