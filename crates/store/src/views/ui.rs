//! Read-only aggregates for the board UI's charts: one grouped query each,
//! whatever the number of rows.

use crate::engine::row::RowExt;
use crate::{Result, Store};

/// `(day "YYYY-MM-DD", status, count)` of runs created since `since_day`.
pub async fn runs_by_day(
    store: &Store,
    company_id: &str,
    since_day: &str,
) -> Result<Vec<(String, String, i64)>> {
    grouped(
        store,
        "SELECT SUBSTR(created_at, 1, 10) AS day, status, COUNT(*) AS n FROM heartbeat_runs \
         WHERE company_id = $1 AND created_at >= $2 GROUP BY SUBSTR(created_at, 1, 10), status",
        company_id,
        since_day,
    )
    .await
}

/// `(day, current status, count)` of tasks created since `since_day`.
pub async fn tasks_by_day(
    store: &Store,
    company_id: &str,
    since_day: &str,
) -> Result<Vec<(String, String, i64)>> {
    grouped(
        store,
        "SELECT SUBSTR(created_at, 1, 10) AS day, status, COUNT(*) AS n FROM issues \
         WHERE company_id = $1 AND created_at >= $2 GROUP BY SUBSTR(created_at, 1, 10), status",
        company_id,
        since_day,
    )
    .await
}

async fn grouped(
    store: &Store,
    sql: &str,
    company_id: &str,
    since: &str,
) -> Result<Vec<(String, String, i64)>> {
    let rows = crate::engine::db::query(sql)
        .bind(company_id)
        .bind(since)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| Ok((r.text("day")?, r.text("status")?, r.int("n")?)))
        .collect()
}

/// Each agent's newest in-progress task (agent, identifier, title), for
/// the agents page: one index seek per agent (migration 9), never a walk of
/// every in-progress task (22,500 of a million: on Postgres 37 ms when their
/// pages are not all-visible, as a busy table's are, against 11-15 ms).
pub async fn working_on(store: &Store, company_id: &str) -> Result<Vec<(String, String, String)>> {
    current_tasks(store, company_id, None).await
}

/// [`working_on`] for a few agents of the company (the dashboard's cards).
pub async fn working_on_of(
    store: &Store,
    company_id: &str,
    agent_ids: &[&str],
) -> Result<Vec<(String, String, String)>> {
    if agent_ids.is_empty() {
        return Ok(Vec::new());
    }
    current_tasks(store, company_id, Some(agent_ids)).await
}

async fn current_tasks(
    store: &Store,
    company_id: &str,
    agent_ids: Option<&[&str]>,
) -> Result<Vec<(String, String, String)>> {
    let only = match agent_ids {
        Some(_) => format!(
            " AND a.id IN {}",
            crate::engine::sql::json_values(store.backend(), "$2", crate::engine::sql::ListOf::Ids)
        ),
        None => String::new(),
    };
    let ids = agent_ids.map(|ids| crate::engine::sql::json_array(ids.iter()));
    if store.backend() == crate::Backend::Postgres {
        let sql = format!(
            "SELECT a.id AS assignee_agent_id, x.identifier, x.title FROM agents a \
             CROSS JOIN LATERAL (SELECT i.identifier, i.title, i.issue_number FROM issues i \
                 WHERE i.company_id = $1 AND i.status = 'in_progress' AND i.assignee_agent_id = a.id \
                 ORDER BY i.issue_number DESC LIMIT 1) x \
             WHERE a.company_id = $1{only} ORDER BY x.issue_number DESC"
        );
        let mut query = crate::engine::db::query(&sql).bind(company_id);
        if let Some(ids) = &ids {
            query = query.bind(ids);
        }
        let rows = query.fetch_all(store.pool()).await?;
        return rows.iter().map(current_task).collect();
    }
    // SQLite has no LATERAL, and as one join 3.46 may drive it from the
    // million-row side (120 s at 1M tasks): the numbers first, then the tasks.
    let newest_sql = format!(
        "SELECT n FROM (SELECT (SELECT MAX(i.issue_number) FROM issues i WHERE i.company_id = $1 \
         AND i.status = 'in_progress' AND i.assignee_agent_id = a.id) AS n \
         FROM agents a WHERE a.company_id = $1{only}) newest WHERE n IS NOT NULL"
    );
    let mut query = crate::engine::db::query_as(&newest_sql).bind(company_id);
    if let Some(ids) = &ids {
        query = query.bind(ids);
    }
    let newest: Vec<(i64,)> = query.fetch_all(store.pool()).await?;
    if newest.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT assignee_agent_id, identifier, title FROM issues \
         WHERE company_id = $1 AND issue_number IN {} ORDER BY issue_number DESC",
        crate::engine::sql::json_values(store.backend(), "$2", crate::engine::sql::ListOf::Numbers)
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(crate::engine::sql::json_array(newest.iter().map(|(n,)| n)))
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(current_task).collect()
}

fn current_task(r: &crate::engine::db::DbRow) -> Result<(String, String, String)> {
    Ok((
        r.text("assignee_agent_id")?,
        r.text("identifier")?,
        r.text("title")?,
    ))
}

/// The timeline events of every run on an issue, in run and sequence order:
/// one query for the whole task page.
pub async fn run_events_of_issue(
    store: &Store,
    issue_id: &str,
) -> Result<Vec<paperclip_core::model::RunEvent>> {
    let rows = crate::engine::db::query(
        "SELECT e.* FROM heartbeat_run_events e JOIN heartbeat_runs r ON r.id = e.run_id \
         WHERE r.issue_id = $1 ORDER BY e.run_id, e.seq LIMIT 5000",
    )
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(crate::runs::table::map_event).collect()
}

/// Priced spend and event count of one issue.
pub async fn issue_cost(store: &Store, issue_id: &str) -> Result<(i64, i64)> {
    let row = crate::engine::db::query(concat!(
        "SELECT CAST(COALESCE(SUM(",
        capped!("cost_cents"),
        "), 0) AS BIGINT) AS spend, COUNT(*) AS n FROM cost_events WHERE issue_id = $1"
    ))
    .bind(issue_id)
    .fetch_one(store.pool())
    .await?;
    Ok((row.int("spend")?, row.int("n")?))
}
