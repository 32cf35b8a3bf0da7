//! Read-only aggregates for the board UI's charts: one grouped query each,
//! whatever the number of rows.

use crate::row::RowExt;
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
    let rows = crate::db::query(sql)
        .bind(company_id)
        .bind(since)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| Ok((r.text("day")?, r.text("status")?, r.int("n")?)))
        .collect()
}

/// Each agent's newest in-progress task (agent, identifier, title), for
/// agent cards: the newest per agent is found in an index alone (migration
/// 9), then those tasks are read by their numbers. Two statements on
/// purpose: as one join, SQLite 3.46 may drive it from the million-row side
/// (measured: 120 s at 1M tasks). SQLite seeks the index once per agent
/// rather than walking every in-progress task (22,500 of a million: 2.6 ms
/// against 6); Postgres walks it (12 ms, against 70+ for 1,000 seeks).
pub async fn working_on(store: &Store, company_id: &str) -> Result<Vec<(String, String, String)>> {
    let newest_sql = match store.backend() {
        crate::Backend::Sqlite => {
            "SELECT n FROM (SELECT (SELECT MAX(i.issue_number) FROM issues i WHERE i.company_id = $1 \
             AND i.status = 'in_progress' AND i.assignee_agent_id = a.id) AS n \
             FROM agents a WHERE a.company_id = $1) newest WHERE n IS NOT NULL"
        }
        crate::Backend::Postgres => {
            "SELECT MAX(issue_number) FROM issues WHERE company_id = $1 \
             AND status = 'in_progress' AND assignee_agent_id IS NOT NULL GROUP BY assignee_agent_id"
        }
    };
    let newest: Vec<(i64,)> = crate::db::query_as(newest_sql)
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
    tasks_by_number(store, company_id, &newest).await
}

/// (assignee, identifier, title) of the company's tasks numbered `numbers`.
async fn tasks_by_number(
    store: &Store,
    company_id: &str,
    newest: &[(i64,)],
) -> Result<Vec<(String, String, String)>> {
    if newest.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT assignee_agent_id, identifier, title FROM issues \
         WHERE company_id = $1 AND issue_number IN {} ORDER BY issue_number DESC",
        crate::issue_list::json_values(store.backend(), "$2", "BIGINT")
    );
    let rows = crate::db::query(&sql)
        .bind(company_id)
        .bind(crate::issue_list::json_array(newest.iter().map(|(n,)| n)))
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.text("assignee_agent_id")?,
                r.text("identifier")?,
                r.text("title")?,
            ))
        })
        .collect()
}

/// [`working_on`] for a few agents of the company (the dashboard's cards):
/// one index seek per agent on either engine.
pub async fn working_on_of(
    store: &Store,
    company_id: &str,
    agent_ids: &[&str],
) -> Result<Vec<(String, String, String)>> {
    if agent_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = crate::issue_list::json_values(store.backend(), "$2", "TEXT");
    let newest: Vec<(i64,)> = crate::db::query_as(&format!(
        "SELECT n FROM (SELECT (SELECT MAX(i.issue_number) FROM issues i WHERE i.company_id = $1 \
         AND i.status = 'in_progress' AND i.assignee_agent_id = a.id) AS n \
         FROM agents a WHERE a.company_id = $1 AND a.id IN {ids}) newest WHERE n IS NOT NULL"
    ))
    .bind(company_id)
    .bind(crate::issue_list::json_array(agent_ids.iter()))
    .fetch_all(store.pool())
    .await?;
    tasks_by_number(store, company_id, &newest).await
}

/// The timeline events of every run on an issue, in run and sequence order:
/// one query for the whole task page.
pub async fn run_events_of_issue(
    store: &Store,
    issue_id: &str,
) -> Result<Vec<paperclip_core::model::RunEvent>> {
    let rows = crate::db::query(
        "SELECT e.* FROM heartbeat_run_events e JOIN heartbeat_runs r ON r.id = e.run_id \
         WHERE r.issue_id = $1 ORDER BY e.run_id, e.seq LIMIT 5000",
    )
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(crate::runs::map_event).collect()
}

/// Priced spend and event count of one issue.
pub async fn issue_cost(store: &Store, issue_id: &str) -> Result<(i64, i64)> {
    let row = crate::db::query(concat!(
        "SELECT CAST(COALESCE(SUM(",
        capped!("cost_cents"),
        "), 0) AS BIGINT) AS spend, COUNT(*) AS n FROM cost_events WHERE issue_id = $1"
    ))
    .bind(issue_id)
    .fetch_one(store.pool())
    .await?;
    Ok((row.int("spend")?, row.int("n")?))
}
