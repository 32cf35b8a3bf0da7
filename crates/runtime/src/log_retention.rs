//! Run log retention: a company that keeps run logs for N days
//! (`runLogRetentionDays`) has the logs of its runs finished more than N days
//! ago deleted by a sweep, which marks each such run (`logRemovedAt`) so its
//! page says the log was removed rather than empty.
//!
//! The sweep runs once at start and then every [`SWEEP_INTERVAL`], on the
//! routines' [`Clock`] (so `--test-clock` moves it too; the test clock's
//! route runs a pass). It is idempotent and safe across restarts: a log is
//! deleted before its run is marked, a log already gone is fine, and a run
//! that is queued, running or owned by this process is never touched.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use paperclip_store::Store;

use crate::live::LiveRuns;
use crate::logs::RunLogStore;
use crate::routines::Clock;

/// How often the sweep runs.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(3600);
/// Runs looked at per query.
const BATCH: i64 = 500;

pub(crate) async fn run(
    store: Store,
    logs: Arc<dyn RunLogStore>,
    live: Arc<LiveRuns>,
    clock: Arc<Clock>,
) {
    loop {
        if let Err(err) = sweep(&store, &*logs, &live, clock.now()).await {
            tracing::warn!(error = %err, "run log retention sweep failed");
        }
        tokio::time::sleep(SWEEP_INTERVAL).await;
    }
}

/// One pass at `now`; the number of logs removed.
pub(crate) async fn sweep(
    store: &Store,
    logs: &dyn RunLogStore,
    live: &LiveRuns,
    now: DateTime<Utc>,
) -> anyhow::Result<usize> {
    let at = now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let mut removed = 0;
    for (company_id, days) in paperclip_store::runs::logs::retention(store).await? {
        let Some(cutoff) = now.checked_sub_signed(chrono::Duration::days(days.max(1))) else {
            continue;
        };
        let before = cutoff.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        loop {
            let batch =
                paperclip_store::runs::logs::expired(store, &company_id, &before, BATCH).await?;
            let mut progress = false;
            let live_ids = live.ids();
            for run in &batch {
                // Settled in the database, but still closing here: next pass.
                if live_ids.contains(&run.run_id) {
                    continue;
                }
                let ref_ok = run.log_ref.starts_with(&format!("{}/", run.company_id));
                if ref_ok {
                    logs.remove(&run.log_ref)?;
                }
                if paperclip_store::runs::logs::mark_removed(store, &run.run_id, &at).await? {
                    removed += 1;
                    progress = true;
                }
            }
            if (batch.len() as i64) < BATCH || !progress {
                break;
            }
        }
    }
    if removed > 0 {
        tracing::info!(removed, "run logs removed by retention");
    }
    Ok(removed)
}
