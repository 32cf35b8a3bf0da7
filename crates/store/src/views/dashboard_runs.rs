//! The dashboard's upstream-shaped parts that need more than the counters:
//! the run chart with failures by error code and recovered runs, and the
//! budget overview.

use std::collections::BTreeMap;

use paperclip_core::model::BudgetIncident;

use crate::engine::row::RowExt;
use crate::views::days::{BudgetState, Day, RunDay};
use crate::{Result, Store};

/// Upstream's run chart over `days` (the runs per day by status, oldest
/// first): failed and timed-out runs split into those a later retry
/// recovered and the rest, by error code.
pub(crate) async fn run_activity(
    store: &Store,
    company_id: &str,
    days: &[Day],
) -> Result<Vec<RunDay>> {
    let Some(first) = days.first().map(|d| d.day.clone()) else {
        return Ok(Vec::new());
    };
    let failed = by_day_and_code(
        store,
        "SELECT SUBSTR(created_at, 1, 10) AS day, COALESCE(error_code, 'unknown') AS code, COUNT(*) AS n \
         FROM heartbeat_runs WHERE company_id = $1 AND created_at >= $2 AND status IN ('failed', 'timed_out') \
         GROUP BY SUBSTR(created_at, 1, 10), COALESCE(error_code, 'unknown')",
        company_id,
        &first,
    )
    .await?;
    // A failure is recovered when a later run of its retry chain succeeded
    // (each retry names the run it retries, and is made after it, so inside
    // the window). The chains are walked back from the window's successful
    // retries, which are few, by the runs' ids: SQLite joins a CROSS JOIN in
    // the order written, and the unindexable `COALESCE(x, x)` keeps both engines on
    // those ids rather than on all the failures (SQLite 3.46 otherwise read
    // every failed run of every company: 20 ms at 100,000 runs).
    let recovered = by_day_and_code(
        store,
        "WITH RECURSIVE up(id, depth) AS ( \
           SELECT retry_of_run_id, 0 FROM heartbeat_runs WHERE company_id = $1 AND created_at >= $2 \
             AND retry_of_run_id IS NOT NULL AND status = 'succeeded' \
           UNION ALL \
           SELECT r.retry_of_run_id, up.depth + 1 FROM up JOIN heartbeat_runs r ON r.id = up.id \
             WHERE r.retry_of_run_id IS NOT NULL AND up.depth < 100) \
         SELECT day, code, COUNT(*) AS n FROM ( \
           SELECT DISTINCT o.id, SUBSTR(o.created_at, 1, 10) AS day, COALESCE(o.error_code, 'unknown') AS code \
           FROM up CROSS JOIN heartbeat_runs o \
           WHERE o.id = up.id AND COALESCE(o.company_id, o.company_id) = $1 \
             AND COALESCE(o.created_at, o.created_at) >= $2 \
             AND o.status IN ('failed', 'timed_out')) recovered \
         GROUP BY day, code",
        company_id,
        &first,
    )
    .await?;
    Ok(days
        .iter()
        .map(|d| {
            let n = |s: &str| d.by_status.get(s).copied().unwrap_or(0);
            let total: i64 = d.by_status.values().sum();
            let succeeded = n("succeeded");
            let failures = n("failed") + n("timed_out");
            let mut by_code = failed.get(&d.day).cloned().unwrap_or_default();
            let mut recovered_n = 0;
            for (code, r) in recovered.get(&d.day).into_iter().flatten() {
                recovered_n += r;
                if let Some(left) = by_code.get_mut(code) {
                    *left -= r;
                }
            }
            by_code.retain(|_, n| *n > 0);
            RunDay {
                date: d.day.clone(),
                succeeded,
                failed: (failures - recovered_n).max(0),
                recovered: recovered_n,
                other: total - succeeded - failures,
                total,
                failed_by_error_code: by_code,
            }
        })
        .collect())
}

/// `day -> code -> n` from a query of `(day, code, n)` rows.
async fn by_day_and_code(
    store: &Store,
    sql: &str,
    company_id: &str,
    first: &str,
) -> Result<BTreeMap<String, BTreeMap<String, i64>>> {
    let rows = crate::engine::db::query(sql)
        .bind(company_id)
        .bind(first)
        .fetch_all(store.pool())
        .await?;
    let mut out: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for row in rows {
        out.entry(row.text("day")?)
            .or_default()
            .insert(row.text("code")?, row.int("n")?);
    }
    Ok(out)
}

/// Upstream's budget overview counts, with the open incidents (ours).
pub(crate) async fn budget_state(
    store: &Store,
    company_id: &str,
    open_incidents: Vec<BudgetIncident>,
) -> Result<BudgetState> {
    let (pending,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM approvals WHERE company_id = $1 AND status = 'pending' \
         AND type = 'budget_override_required'",
    )
    .bind(company_id)
    .fetch_one(store.pool())
    .await?;
    let (paused,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM agents WHERE company_id = $1 AND status = 'paused' AND pause_reason = 'budget'",
    )
    .bind(company_id)
    .fetch_one(store.pool())
    .await?;
    Ok(BudgetState {
        active_incidents: open_incidents.len() as i64,
        pending_approvals: pending,
        paused_agents: paused,
        paused_projects: 0,
        open_incidents,
    })
}
