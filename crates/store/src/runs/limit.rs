//! `maxConcurrentRuns` as the database sees it. The executor's own count is
//! only a shortcut: two executors (or two dispatch passes) on one database
//! must not start more runs of an agent than its policy allows.

use paperclip_core::heartbeat::HeartbeatPolicy;

use crate::engine::row::RowExt;
use crate::{Result, Tx};

/// Whether the agent may start one more run. Call it inside the claim after
/// the agent row has been written: on Postgres that row lock serialises the
/// claims of one agent, so the count cannot change under this one (READ
/// COMMITTED gives every statement a fresh snapshot after the lock wait).
pub(crate) async fn has_free_slot(tx: &mut Tx, agent_id: &str) -> Result<bool> {
    let row = crate::engine::db::query(
        "SELECT a.runtime_config, (SELECT COUNT(*) FROM heartbeat_runs r \
         WHERE r.agent_id = a.id AND r.status = 'running') AS running_count \
         FROM agents a WHERE a.id = $1",
    )
    .bind(agent_id)
    .fetch_one(tx.conn())
    .await?;
    let policy = HeartbeatPolicy::from_runtime_config(&row.json("runtime_config")?);
    Ok(row.int("running_count")? < i64::from(policy.max_concurrent_runs))
}
