//! Run log retention: which finished runs' logs a company's retention has
//! outlived, and the mark a removed log leaves on its run.

use crate::engine::row::RowExt;
use crate::{Result, Store};

/// A run whose log the retention sweep may remove.
#[derive(Debug, Clone)]
pub struct Expired {
    pub run_id: String,
    pub company_id: String,
    pub log_ref: String,
}

/// Companies keeping run logs for a limited time: `(id, days)`.
pub async fn retention(store: &Store) -> Result<Vec<(String, i64)>> {
    let rows = crate::engine::db::query(
        "SELECT id, run_log_retention_days FROM companies \
         WHERE run_log_retention_days IS NOT NULL ORDER BY id",
    )
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((r.text("id")?, r.int("run_log_retention_days")?)))
        .collect()
}

/// Up to `limit` finished runs of the company that finished before
/// `before` (RFC 3339) and still have their log, oldest first. A run still
/// queued or running is never one: its log is being written.
pub async fn expired(
    store: &Store,
    company_id: &str,
    before: &str,
    limit: i64,
) -> Result<Vec<Expired>> {
    // `created_at` first: a run finishes after it was made, and the
    // (company_id, created_at, status) index finds the candidates.
    let rows = crate::engine::db::query(
        "SELECT id, company_id, log_ref FROM heartbeat_runs \
         WHERE company_id = $1 AND created_at < $2 AND status NOT IN ('queued', 'running') \
         AND finished_at IS NOT NULL AND finished_at < $2 AND log_removed_at IS NULL \
         ORDER BY created_at, id LIMIT $3",
    )
    .bind(company_id)
    .bind(before)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| {
            let run_id = r.text("id")?;
            let company_id = r.text("company_id")?;
            let log_ref = r
                .opt_text("log_ref")?
                .unwrap_or_else(|| format!("{company_id}/{run_id}.ndjson"));
            Ok(Expired {
                run_id,
                company_id,
                log_ref,
            })
        })
        .collect()
}

/// Records that the run's log was removed at `at`; a second call keeps the
/// first time. `false` when the run is gone or was already marked.
pub async fn mark_removed(store: &Store, run_id: &str, at: &str) -> Result<bool> {
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "UPDATE heartbeat_runs SET log_removed_at = $2 WHERE id = $1 AND log_removed_at IS NULL \
         AND status NOT IN ('queued', 'running')",
    )
    .bind(run_id)
    .bind(at)
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n > 0)
}
