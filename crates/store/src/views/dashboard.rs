//! The company dashboard. Counts that would group a million rows (tasks by
//! status, runs and tasks per day, the month's spend) read counters that
//! triggers keep in the same transaction as every write (migrations 9 and
//! 13), so they always agree with the tables; the rest are small queries.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use paperclip_core::budget::utilization_percent;
use paperclip_core::model::{ActivityEntry, HeartbeatRun};
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::row::RowExt;
use crate::money::costs::{self, Window};
use crate::views::days::*;
pub use crate::views::days::{chart_days, BudgetState, Day, RunDay};
use crate::{Result, Store};

/// The dashboard in upstream's shape (`agents`, `tasks`, `costs`,
/// `pendingApprovals`, `budgets`, `runActivity`), with keys of ours beside
/// them: never inside a value whose type upstream fixes.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub company_id: String,
    pub agents: AgentCounts,
    pub tasks: TaskCounts,
    pub costs: MonthCosts,
    pub pending_approvals: i64,
    pub budgets: BudgetState,
    /// Runs created per UTC day, oldest first, 14 days (upstream's chart).
    pub run_activity: Vec<RunDay>,
    /// Runs by current status over the same days, and the latest runs (ours).
    pub run_chart: RunChart,
    pub task_activity: TaskActivity,
    pub recent_activity: Vec<ActivityEntry>,
    /// Wakes skipped and why, idle against task spend, spend per finished
    /// task and tokens per run.
    pub thrift: crate::money::thrift::Thrift,
}

/// Agents by upstream's buckets (`idle` counts as active), and (ours) the
/// total and every status's count.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentCounts {
    pub active: i64,
    pub running: i64,
    pub paused: i64,
    pub error: i64,
    pub total: i64,
    pub by_status: BTreeMap<String, i64>,
}

/// Tasks by upstream's buckets (`open` is every task not done or
/// cancelled), and (ours) the total and every status's count.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskCounts {
    pub open: i64,
    pub in_progress: i64,
    pub blocked: i64,
    pub done: i64,
    pub total: i64,
    pub by_status: BTreeMap<String, i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonthCosts {
    pub month_spend_cents: i64,
    pub month_budget_cents: i64,
    pub month_utilization_percent: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunChart {
    /// Runs created in the 14 UTC days of `days` (today and the 13 before),
    /// by current status.
    pub last_14_days: BTreeMap<String, i64>,
    /// Runs created per UTC day, by current status, oldest first, 14 days.
    pub days: Vec<Day>,
    pub recent_runs: Vec<HeartbeatRun>,
}

/// Tasks created per UTC day, by current status: the task chart (ours).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskActivity {
    pub days: Vec<Day>,
}

pub async fn get(store: &Store, company_id: &str, now: DateTime<Utc>) -> Result<Dashboard> {
    // Independent reads, each on a connection of its own: one after the
    // other they were ~20 round trips (10 ms of a Postgres dashboard with
    // 1,000 tasks, every statement under a millisecond).
    let month = Window::month_of(now);
    let pending = async {
        let (n,): (i64,) = crate::engine::db::query_as(
            "SELECT COUNT(*) FROM approvals WHERE company_id = $1 AND status = 'pending'",
        )
        .bind(company_id)
        .fetch_one(store.pool())
        .await?;
        Ok::<i64, crate::Error>(n)
    };
    let run_filter = crate::runs::table::Filter {
        limit: 10,
        ..Default::default()
    };
    let activity_filter = crate::audit::activity::Filter {
        limit: 10,
        ..Default::default()
    };
    let recent_runs = crate::runs::table::list(store, company_id, &run_filter);
    let recent_activity = crate::audit::activity::list(store, company_id, &activity_filter);
    let (company, agents, tasks, run_days, task_days, summary, pending, open_incidents) = tokio::try_join!(
        crate::org::companies::get(store, company_id),
        grouped(
            store,
            "SELECT status AS k, COUNT(*) AS n FROM agents WHERE company_id = $1 GROUP BY status",
            company_id,
        ),
        // Kept by triggers (migration 9): seven rows, not a million.
        grouped(
            store,
            "SELECT status AS k, n FROM issue_status_counts WHERE company_id = $1 AND n > 0",
            company_id,
        ),
        crate::views::run_days::runs_per_day(store, company_id, now),
        per_day(store, company_id, "task", now),
        costs::summary(store, company_id, &month),
        pending,
        crate::money::budgets::incidents(store, company_id, Some("open")),
    )?;
    let (run_activity, budgets, recent_runs, recent_activity, thrift) = tokio::try_join!(
        crate::views::dashboard_runs::run_activity(store, company_id, &run_days),
        crate::views::dashboard_runs::budget_state(store, company_id, open_incidents),
        recent_runs,
        recent_activity,
        crate::money::thrift::get(store, company_id, None, now),
    )?;
    let mut runs = BTreeMap::new();
    for (status, n) in run_days.iter().flat_map(|d| &d.by_status) {
        *runs.entry(status.clone()).or_insert(0) += n;
    }
    Ok(Dashboard {
        thrift,
        company_id: company_id.to_string(),
        agents: AgentCounts::of(agents),
        tasks: TaskCounts::of(tasks),
        costs: MonthCosts {
            month_spend_cents: summary.spend_cents,
            month_budget_cents: company.budget_monthly_cents,
            month_utilization_percent: utilization_percent(
                summary.spend_cents,
                company.budget_monthly_cents,
            ),
        },
        pending_approvals: pending,
        budgets,
        run_activity,
        run_chart: RunChart {
            last_14_days: runs,
            days: run_days,
            recent_runs,
        },
        task_activity: TaskActivity { days: task_days },
        recent_activity,
    })
}

impl AgentCounts {
    fn of(by_status: BTreeMap<String, i64>) -> AgentCounts {
        let n = |s: &str| by_status.get(s).copied().unwrap_or(0);
        AgentCounts {
            active: n("active") + n("idle"),
            running: n("running"),
            paused: n("paused"),
            error: n("error"),
            total: by_status.values().sum(),
            by_status,
        }
    }
}

impl TaskCounts {
    fn of(by_status: BTreeMap<String, i64>) -> TaskCounts {
        let n = |s: &str| by_status.get(s).copied().unwrap_or(0);
        let total: i64 = by_status.values().sum();
        TaskCounts {
            open: total - n("done") - n("cancelled"),
            in_progress: n("in_progress"),
            blocked: n("blocked"),
            done: n("done"),
            total,
            by_status,
        }
    }
}

async fn grouped(store: &Store, sql: &str, company_id: &str) -> Result<BTreeMap<String, i64>> {
    let rows = crate::engine::db::query(sql)
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
    let mut by_status = BTreeMap::new();
    for row in rows {
        by_status.insert(row.text("k")?, row.int("n")?);
    }
    Ok(by_status)
}
