//! Postgres: the dashboard's runs per day and status. Days that can no
//! longer change are read from `run_day_totals` (migration 22), written the
//! first time a dashboard needs them; the rest are grouped from the runs'
//! (company, created_at, status) index. Grouping the whole fortnight took
//! 36 ms at 100,000 runs on every dashboard; now it is today's runs only.
//!
//! Kept rather than counted by triggers: a run's status changes inside
//! transactions that also queue and finish other runs, and counters locked
//! in those orders deadlocked (a wake racing a cancel). A settled day needs
//! no lock: nothing writes it again but an agent's deletion, which takes the
//! company's key below exclusively and drops the kept days.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::engine::row::RowExt;
use crate::views::days::per_day as kept_per_day;
use crate::views::days::{chart_days, counted, Day};
use crate::{Result, Store, Tx};

/// Marks a kept day that had no runs, so it is not grouped again.
const NO_RUNS: &str = "";

/// The chart's 14 days, each with its runs by status.
pub(crate) async fn per_day(
    store: &Store,
    company_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Day>> {
    let days = chart_days(now);
    let counts = counts(store, company_id, &days, now).await?;
    Ok(crate::views::days::days_with(days, counts))
}

/// Runs created over the UTC days `[first, next)` (a month's, for the
/// dashboard's thrift figures: 4 ms counted from the index at 100,000).
pub(crate) async fn between(
    store: &Store,
    company_id: &str,
    first: &str,
    next: &str,
    now: DateTime<Utc>,
) -> Result<i64> {
    let mut days = Vec::new();
    let mut day = NaiveDate::parse_from_str(first, "%Y-%m-%d")
        .map_err(|e| crate::Error::invalid("from", format!("day {first}: {e}")))?;
    // A month at most in practice; the bound keeps a bad range cheap.
    while days.len() < 400 {
        let text = day.format("%Y-%m-%d").to_string();
        if *text >= *next {
            break;
        }
        days.push(text);
        day = day.succ_opt().unwrap_or(day);
    }
    if days.is_empty() {
        return Ok(0);
    }
    Ok(counts(store, company_id, &days, now)
        .await?
        .iter()
        .map(|(_, _, n)| n)
        .sum())
}

/// (day, status, runs) over `days` (consecutive, ascending), keeping the
/// settled days not kept yet on the way.
async fn counts(
    store: &Store,
    company_id: &str,
    days: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<(String, String, i64)>> {
    let (first, last) = (&days[0], &days[days.len() - 1]);
    let end = NaiveDate::parse_from_str(last, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.succ_opt())
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "9999-12-31".to_string());
    let settled_before = settled_before(store, company_id, now).await?;
    let mut found = read(store, company_id, first, &end, &settled_before).await?;
    let missing: Vec<&String> = days
        .iter()
        .filter(|d| **d < settled_before && !found.kept.contains(d.as_str()))
        .collect();
    if let Some(first_missing) = missing.first() {
        keep(store, company_id, &missing, first_missing, &settled_before).await?;
        found = read(store, company_id, first, &end, &settled_before).await?;
    }
    Ok(found.counts)
}

/// The first day that may still change: the day of the company's oldest
/// run still queued or running, or the day an hour ago (so a server whose
/// clock is a little behind cannot add to a day already kept).
async fn settled_before(store: &Store, company_id: &str, now: DateTime<Utc>) -> Result<String> {
    let limit = (now - Duration::hours(1)).format("%Y-%m-%d").to_string();
    // Few rows: the (company, status, id) index holds the open runs together.
    let (oldest,): (Option<String>,) = crate::engine::db::query_as(
        "SELECT MIN(created_at) FROM heartbeat_runs WHERE company_id = $1 \
         AND status IN ('queued', 'running')",
    )
    .bind(company_id)
    .fetch_one(store.pool())
    .await?;
    Ok(match oldest {
        Some(at) if at.len() >= 10 && at[..10] < *limit => at[..10].to_string(),
        _ => limit,
    })
}

struct Read {
    /// Days found in `run_day_totals`.
    kept: BTreeSet<String>,
    /// (day, status, runs) of every chart day, kept or grouped.
    counts: Vec<(String, String, i64)>,
}

/// The days `[first, end)`: kept ones from `run_day_totals`, the others
/// (from `settled_before` on) grouped from the runs.
async fn read(
    store: &Store,
    company_id: &str,
    first: &str,
    end: &str,
    settled_before: &str,
) -> Result<Read> {
    let kept_end = end.min(settled_before);
    let live_from = first.max(settled_before);
    let rows = crate::engine::db::query(
        "SELECT CAST(1 AS BIGINT) AS kept, day, status, n FROM run_day_totals \
         WHERE company_id = $1 AND day >= $2 AND day < $3 \
         UNION ALL \
         SELECT CAST(0 AS BIGINT), SUBSTR(created_at, 1, 10), status, COUNT(*) FROM heartbeat_runs \
         WHERE company_id = $1 AND created_at >= $4 AND created_at < $5 \
         GROUP BY SUBSTR(created_at, 1, 10), status",
    )
    .bind(company_id)
    .bind(first)
    .bind(kept_end)
    .bind(live_from)
    .bind(end)
    .fetch_all(store.pool())
    .await?;
    let mut out = Read {
        kept: BTreeSet::new(),
        counts: Vec::new(),
    };
    for r in &rows {
        let day = r.text("day")?;
        let status = r.text("status")?;
        if r.int("kept")? == 1 {
            out.kept.insert(day.clone());
        }
        if status != NO_RUNS {
            out.counts.push((day, status, r.int("n")?));
        }
    }
    Ok(out)
}

/// Groups the runs of `missing` days (all before `settled_before`) and keeps
/// them, a day without runs as one `NO_RUNS` row. Two dashboards keeping the
/// same day write the same rows; the second one's are dropped.
async fn keep(
    store: &Store,
    company_id: &str,
    missing: &[&String],
    first: &str,
    settled_before: &str,
) -> Result<()> {
    let mut tx = store.begin().await?;
    lock(&mut tx, company_id, false).await?;
    crate::engine::db::query(
        "INSERT INTO run_day_totals (company_id, day, status, n) \
         SELECT $1, d.day, COALESCE(g.status, ''), COALESCE(g.n, 0) \
         FROM json_array_elements_text(CAST($2 AS json)) AS d(day) \
         LEFT JOIN (SELECT SUBSTR(created_at, 1, 10) AS day, status, COUNT(*) AS n FROM heartbeat_runs \
                    WHERE company_id = $1 AND created_at >= $3 AND created_at < $4 \
                    GROUP BY SUBSTR(created_at, 1, 10), status) g ON g.day = d.day \
         ON CONFLICT (company_id, day, status) DO NOTHING",
    )
    .bind(company_id)
    .bind(crate::engine::sql::json_array(missing.iter()))
    .bind(first)
    .bind(settled_before)
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

/// An agent's runs are deleted with it: its company's kept days go in the
/// same transaction. Exclusive against [`keep`], which would otherwise
/// write a day grouped before the deletion after it.
pub(crate) async fn forget(tx: &mut Tx, backend: crate::Backend, company_id: &str) -> Result<()> {
    if backend != crate::Backend::Postgres {
        return Ok(());
    }
    lock(tx, company_id, true).await?;
    crate::engine::db::query("DELETE FROM run_day_totals WHERE company_id = $1")
        .bind(company_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

async fn lock(tx: &mut Tx, company_id: &str, exclusive: bool) -> Result<()> {
    let sql = if exclusive {
        "SELECT CAST(pg_advisory_xact_lock(hashtext('run_day_totals ' || $1)) AS TEXT)"
    } else {
        "SELECT CAST(pg_advisory_xact_lock_shared(hashtext('run_day_totals ' || $1)) AS TEXT)"
    };
    crate::engine::db::query(sql)
        .bind(company_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Runs created per chart day, by current status: kept by triggers on
/// SQLite (migration 15); on Postgres, see [`crate::views::run_days`].
pub(crate) async fn runs_per_day(
    store: &Store,
    company_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<Day>> {
    match store.backend() {
        crate::Backend::Sqlite => kept_per_day(store, company_id, "run", now).await,
        crate::Backend::Postgres => per_day(store, company_id, now).await,
    }
}

/// Runs created over the UTC days `[first, next)`.
pub(crate) async fn runs_between(
    store: &Store,
    company_id: &str,
    first: &str,
    next: &str,
    now: DateTime<Utc>,
) -> Result<i64> {
    match store.backend() {
        crate::Backend::Sqlite => counted(store, company_id, "run", first, next).await,
        crate::Backend::Postgres => between(store, company_id, first, next, now).await,
    }
}
