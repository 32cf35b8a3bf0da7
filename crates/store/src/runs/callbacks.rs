//! Asynchronous runs: accepted by a remote worker, completed later through
//! the callback route. Each waits with a deadline, so one whose callback
//! never comes is timed out instead of holding its agent's slot forever.

use paperclip_core::model::HeartbeatRun;
use serde_json::json;

use crate::{now, Result, Store};

/// Marks a running run as waiting for its callback until `deadline` (RFC
/// 3339), and says so in its timeline.
pub async fn await_callback(store: &Store, run: &HeartbeatRun, deadline: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let marked = crate::engine::db::query(
        "UPDATE heartbeat_runs SET callback_deadline_at = $2, updated_at = $3 \
         WHERE id = $1 AND status = 'running'",
    )
    .bind(&run.id)
    .bind(deadline)
    .bind(now())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if marked > 0 {
        crate::runs::table::append_event_in(
            &mut tx,
            run,
            "adapter.awaiting_callback",
            None,
            "info",
            &format!("waiting for the agent's callback until {deadline}"),
            Some(json!({ "callbackDeadlineAt": deadline })),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Running runs whose callback deadline has passed.
pub async fn overdue(store: &Store) -> Result<Vec<HeartbeatRun>> {
    // Times are stored in one RFC 3339 UTC format, so text order is time order.
    let rows = crate::engine::db::query(
        "SELECT * FROM heartbeat_runs WHERE status = 'running' \
         AND callback_deadline_at IS NOT NULL AND callback_deadline_at < $1",
    )
    .bind(now())
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(crate::runs::table::map).collect()
}

/// Ids of running runs that wait for a callback (and have no local process).
pub async fn awaiting(store: &Store) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE status = 'running' AND callback_deadline_at IS NOT NULL",
    )
    .fetch_all(store.pool())
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}
