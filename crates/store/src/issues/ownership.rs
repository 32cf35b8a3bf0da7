//! Checked-out work belongs to the run that checked it out: another run (of
//! any agent) may not write to it while that run is live. The check runs
//! inside the writing transaction, so it cannot race a checkout.

use paperclip_core::actor::Actor;
use paperclip_core::model::Issue;
use serde_json::json;

use crate::{Error, Result, Tx};

/// 409 `Issue run ownership conflict` when an agent's write would touch an
/// issue held by another live run; the board and the holding run pass, and a
/// checkout left by a finished run is no obstacle.
pub(crate) async fn check_run_ownership(tx: &mut Tx, actor: &Actor, issue: &Issue) -> Result<()> {
    let (Some(agent), Some(held_by)) = (actor.agent_id(), issue.checkout_run_id.as_deref()) else {
        return Ok(());
    };
    if actor.run_id.as_deref() == Some(held_by) {
        return Ok(());
    }
    let live: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE id = $1 AND status IN ('queued', 'running')",
    )
    .bind(held_by)
    .fetch_optional(tx.conn())
    .await?;
    if live.is_none() {
        return Ok(());
    }
    Err(Error::conflict(
        "Issue run ownership conflict",
        Some(json!({
            "issueId": issue.id,
            "status": issue.status,
            "assigneeAgentId": issue.assignee_agent_id,
            "checkoutRunId": issue.checkout_run_id,
            "executionRunId": issue.execution_run_id,
            "actorAgentId": agent,
            "actorRunId": actor.run_id,
        })),
    ))
}
