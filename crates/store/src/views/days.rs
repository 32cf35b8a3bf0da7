//! Days on the dashboard's charts: the chart's days, kept per-day counts
//! (triggers on SQLite, computed on Postgres) and the shapes the charts use.

use crate::engine::row::RowExt;
use crate::{Result, Store};
use chrono::{DateTime, Duration, Utc};
use paperclip_core::model::BudgetIncident;
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetState {
    /// Open budget incidents.
    pub active_incidents: i64,
    /// Pending `budget_override_required` approvals.
    pub pending_approvals: i64,
    /// Agents paused by a budget stop.
    pub paused_agents: i64,
    /// Projects paused by a budget stop: always 0, budgets here pause agents.
    pub paused_projects: i64,
    /// The open incidents themselves (ours).
    pub open_incidents: Vec<BudgetIncident>,
}

/// One day of upstream's run chart. `failed` counts failed and timed-out
/// runs that no later retry recovered; `recovered` those a retry (by
/// `retryOfRunId`, however many steps) finished successfully.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDay {
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    pub succeeded: i64,
    pub failed: i64,
    pub recovered: i64,
    pub other: i64,
    pub total: i64,
    /// The unrecovered failures by error code (`unknown` without one).
    pub failed_by_error_code: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Day {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub by_status: BTreeMap<String, i64>,
}

/// The 14 UTC days of the charts, oldest first: today and the 13 before.
pub fn chart_days(now: DateTime<Utc>) -> Vec<String> {
    (0..14)
        .map(|i| {
            (now - Duration::days(13 - i))
                .format("%Y-%m-%d")
                .to_string()
        })
        .collect()
}

/// `subject` (`run` or `task`) created per chart day, by current status:
/// at most 14 days times the statuses of kept rows.
pub(crate) async fn per_day(
    store: &Store,
    company_id: &str,
    subject: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Day>> {
    let days = chart_days(now);
    let rows = crate::engine::db::query(
        "SELECT day, status, n FROM company_day_counts WHERE company_id = $1 AND subject = $2 \
         AND day >= $3 AND day <= $4 AND n <> 0",
    )
    .bind(company_id)
    .bind(subject)
    .bind(&days[0])
    .bind(&days[13])
    .fetch_all(store.pool())
    .await?;
    by_day(days, &rows)
}

/// The chart's days, each with the `(day, status, n)` rows that fall on it.
fn by_day(days: Vec<String>, rows: &[crate::engine::db::DbRow]) -> Result<Vec<Day>> {
    let counts = rows
        .iter()
        .map(|row| Ok((row.text("day")?, row.text("status")?, row.int("n")?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(days_with(days, counts))
}

/// `days`, each with the `(day, status, n)` counts that fall on it.
pub(crate) fn days_with(
    days: Vec<String>,
    counts: impl IntoIterator<Item = (String, String, i64)>,
) -> Vec<Day> {
    let mut out: Vec<Day> = days
        .into_iter()
        .map(|day| Day {
            day,
            by_status: BTreeMap::new(),
        })
        .collect();
    for (day, status, n) in counts {
        if let Some(d) = out.iter_mut().find(|d| d.day == day) {
            d.by_status.insert(status, n);
        }
    }
    out
}

/// The kept count of `subject` (`task`, `done`, or `run` on SQLite) over the UTC days
/// `[first, next)`.
pub(crate) async fn counted(
    store: &Store,
    company_id: &str,
    subject: &str,
    first: &str,
    next: &str,
) -> Result<i64> {
    let (n,): (i64,) = crate::engine::db::query_as(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM company_day_counts \
         WHERE company_id = $1 AND subject = $2 AND day >= $3 AND day < $4",
    )
    .bind(company_id)
    .bind(subject)
    .bind(first)
    .bind(next)
    .fetch_one(store.pool())
    .await?;
    Ok(n)
}
