//! The company dashboard: counts straight from the tables, in a handful of
//! grouped queries, so it always agrees with what the tables say.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use paperclip_core::budget::{stamp, utilization_percent};
use paperclip_core::model::{ActivityEntry, BudgetIncident, HeartbeatRun};
use serde::Serialize;
use utoipa::ToSchema;

use crate::costs::{self, Window};
use crate::row::RowExt;
use crate::{Result, Store};

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    pub company_id: String,
    pub agents: Counts,
    pub tasks: Counts,
    pub costs: MonthCosts,
    pub pending_approvals: i64,
    pub budgets: BudgetState,
    pub run_activity: RunActivity,
    pub recent_activity: Vec<ActivityEntry>,
    /// Wakes skipped and why, idle against task spend, spend per finished
    /// task and tokens per run.
    pub thrift: crate::thrift::Thrift,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub total: i64,
    pub by_status: BTreeMap<String, i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonthCosts {
    pub month_spend_cents: i64,
    pub budget_cents: i64,
    pub utilization_percent: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetState {
    pub open_incidents: Vec<BudgetIncident>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunActivity {
    /// Runs of the last 14 days by status.
    pub last_14_days: BTreeMap<String, i64>,
    pub recent_runs: Vec<HeartbeatRun>,
}

pub async fn get(store: &Store, company_id: &str, now: DateTime<Utc>) -> Result<Dashboard> {
    let company = crate::companies::get(store, company_id).await?;
    let agents = grouped(
        store,
        "SELECT status AS k, COUNT(*) AS n FROM agents WHERE company_id = $1 GROUP BY status",
        company_id,
        None,
    )
    .await?;
    let tasks = grouped(
        store,
        // Kept by triggers (migration 9): seven rows, not a million.
        "SELECT status AS k, n FROM issue_status_counts WHERE company_id = $1 AND n > 0",
        company_id,
        None,
    )
    .await?;
    let since = stamp(now - Duration::days(14));
    let runs = grouped(
        store,
        "SELECT status AS k, COUNT(*) AS n FROM heartbeat_runs WHERE company_id = $1 AND created_at >= $2 GROUP BY status",
        company_id,
        Some(&since),
    )
    .await?;
    let summary = costs::summary(store, company_id, &Window::month_of(now)).await?;
    let (pending,): (i64,) = crate::db::query_as(
        "SELECT COUNT(*) FROM approvals WHERE company_id = $1 AND status = 'pending'",
    )
    .bind(company_id)
    .fetch_one(store.pool())
    .await?;
    let open_incidents = crate::budgets::incidents(store, company_id, Some("open")).await?;
    let recent_runs = crate::runs::list(
        store,
        company_id,
        &crate::runs::Filter {
            limit: 10,
            ..Default::default()
        },
    )
    .await?;
    let recent_activity = crate::activity::list(
        store,
        company_id,
        &crate::activity::Filter {
            limit: 10,
            ..Default::default()
        },
    )
    .await?;
    let thrift = crate::thrift::get(store, company_id, None, now).await?;
    Ok(Dashboard {
        thrift,
        company_id: company_id.to_string(),
        agents,
        tasks,
        costs: MonthCosts {
            month_spend_cents: summary.spend_cents,
            budget_cents: company.budget_monthly_cents,
            utilization_percent: utilization_percent(
                summary.spend_cents,
                company.budget_monthly_cents,
            ),
        },
        pending_approvals: pending,
        budgets: BudgetState { open_incidents },
        run_activity: RunActivity {
            last_14_days: runs.by_status,
            recent_runs,
        },
        recent_activity,
    })
}

async fn grouped(
    store: &Store,
    sql: &str,
    company_id: &str,
    since: Option<&str>,
) -> Result<Counts> {
    let mut query = crate::db::query(sql).bind(company_id);
    if let Some(since) = since {
        query = query.bind(since);
    }
    let rows = query.fetch_all(store.pool()).await?;
    let mut by_status = BTreeMap::new();
    for row in rows {
        by_status.insert(row.text("k")?, row.int("n")?);
    }
    Ok(Counts {
        total: by_status.values().sum(),
        by_status,
    })
}
