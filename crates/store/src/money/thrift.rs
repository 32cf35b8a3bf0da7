//! What the company (or one agent) spends for what: wakes skipped and why,
//! spend on tasks against spend with no task, spend per finished task and
//! tokens per run. The company's figures read the counters kept by
//! migration 13; one agent's are indexed, grouped queries. Each value is
//! capped as every spend sum is (rows from before the input bounds may hold
//! i64::MAX), so a sum cannot overflow.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use paperclip_core::budget::stamp;
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::row::RowExt;
use crate::money::spend::Window;
use crate::{Result, Store};

#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thrift {
    /// Wakes of the last 24 hours that started nothing, per reason
    /// (`no_work`, `loop_held`, `self_wake`, `agent_paused`, ...).
    pub wakes_skipped_24h: BTreeMap<String, i64>,
    /// This month's spend on runs with a task.
    pub task_spend_cents: i64,
    /// This month's spend with no task: heartbeats that found nothing to do.
    pub idle_spend_cents: i64,
    /// This month's tokens (input, cached input and output).
    pub tokens: i64,
    /// Tokens of usage reported without a price.
    pub unpriced_tokens: i64,
    /// Runs started this month.
    pub runs: i64,
    /// Tasks finished (done) this month.
    pub tasks_done: i64,
    /// This month's whole spend over the tasks finished this month.
    pub spend_per_done_task_cents: Option<i64>,
    pub tokens_per_run: Option<i64>,
}

/// The company's figures, or one agent's.
pub async fn get(
    store: &Store,
    company_id: &str,
    agent_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Thrift> {
    let mut out = Thrift::default();
    let day_ago = stamp(now - Duration::hours(24));
    out.wakes_skipped_24h =
        crate::wakes::enqueue::skipped_since(store, company_id, agent_id, &day_ago)
            .await?
            .into_iter()
            .collect();
    let month = Window::month_of(now);
    if agent_id.is_none() {
        // The company's figures: its kept counters (migration 13).
        let key = month.month_key().unwrap_or_default();
        let split = crate::money::cost_totals::task_split(store, company_id, key).await?;
        out.task_spend_cents = split.task_cents;
        out.idle_spend_cents = split.idle_cents;
        out.tokens = split.tokens;
        out.unpriced_tokens = split.unpriced_tokens;
        let (first, next) = (&month.start[..10], &month.end[..10]);
        out.runs =
            crate::views::run_days::runs_between(store, company_id, first, next, now).await?;
        out.tasks_done =
            crate::views::days::counted(store, company_id, "done", first, next).await?;
        return Ok(ratios(out));
    }
    // One agent's: each query names the agent plainly so its index is used
    // (an `agent IS NULL OR` form read the company's whole month: 23 ms for
    // the runs alone at 100,000 a month).
    let rows = crate::engine::db::query(concat!(
        "SELECT CASE WHEN issue_id IS NULL THEN 0 ELSE 1 END AS on_task, \
         CAST(COALESCE(SUM(",
        capped!("cost_cents"),
        "), 0) AS BIGINT) AS cents, \
         CAST(COALESCE(SUM(",
        capped!("input_tokens"),
        " + ",
        capped!("cached_input_tokens"),
        " + ",
        capped!("output_tokens"),
        "), 0) AS BIGINT) AS tokens, \
         CAST(COALESCE(SUM(CASE WHEN cost_cents IS NULL THEN ",
        capped!("input_tokens"),
        " + ",
        capped!("cached_input_tokens"),
        " + ",
        capped!("output_tokens"),
        " ELSE 0 END), 0) AS BIGINT) AS unpriced \
         FROM cost_events WHERE company_id = $1 AND agent_id = $2 \
         AND occurred_at >= $3 AND occurred_at < $4 GROUP BY on_task"
    ))
    .bind(company_id)
    .bind(agent_id)
    .bind(&month.start)
    .bind(&month.end)
    .fetch_all(store.pool())
    .await?;
    for row in rows {
        let cents = row.int("cents")?;
        if row.int("on_task")? == 1 {
            out.task_spend_cents = cents;
        } else {
            out.idle_spend_cents = cents;
        }
        out.tokens += row.int("tokens")?;
        out.unpriced_tokens += row.int("unpriced")?;
    }
    let runs = month_count(
        store,
        "SELECT COUNT(*) FROM heartbeat_runs WHERE company_id = $1 AND agent_id = $2 \
         AND created_at >= $3 AND created_at < $4",
        company_id,
        agent_id,
        &month,
    )
    .await?;
    let done = month_count(
        store,
        "SELECT COUNT(*) FROM issues WHERE company_id = $1 AND assignee_agent_id = $2 \
         AND completed_at >= $3 AND completed_at < $4 AND status = 'done'",
        company_id,
        agent_id,
        &month,
    )
    .await?;
    out.runs = runs;
    out.tasks_done = done;
    Ok(ratios(out))
}

fn ratios(mut out: Thrift) -> Thrift {
    let (runs, done) = (out.runs, out.tasks_done);
    let spend = out.task_spend_cents + out.idle_spend_cents;
    out.spend_per_done_task_cents = (done > 0).then(|| spend / done);
    out.tokens_per_run = (runs > 0).then(|| out.tokens / runs);
    out
}

/// `sql`'s count, given the company, the agent (or none) and the month.
async fn month_count(
    store: &Store,
    sql: &str,
    company_id: &str,
    agent_id: Option<&str>,
    month: &Window,
) -> Result<i64> {
    let (n,): (i64,) = crate::engine::db::query_as(sql)
        .bind(company_id)
        .bind(agent_id)
        .bind(&month.start)
        .bind(&month.end)
        .fetch_one(store.pool())
        .await?;
    Ok(n)
}
