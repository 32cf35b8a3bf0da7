//! Whether an agent has anything to act on: what a timer wake is judged by,
//! so that an idle agent's heartbeat costs one indexed lookup, not a model
//! invocation.

use crate::{Result, Tx};

/// What the agent could act on now, if anything: the first found of
///
/// - `assigned_task`: an assigned task in `todo` or `in_progress` none of
///   whose blockers is still open, that does not wait on the board (a
///   card the agent put in its thread still pending) and that no run of the
///   agent is queued for or working on already (that run does the work: a
///   timer run queued behind it would start with nothing left, a model
///   request spent on nothing; the fleet benchmark found it);
/// - `new_comment`: a comment by someone else on one of its open tasks since
///   its last run started;
/// - `missed_wake`: a wake with a cause (mention, approval result, ...) since
///   then that produced no run because the agent was paused or its policy
///   turned such wakes off, so only its timer can bring the news.
pub(crate) async fn work_for(tx: &mut Tx, agent_id: &str) -> Result<Option<&'static str>> {
    let (company_id, since): (String, String) = crate::engine::db::query_as(
        "SELECT company_id, COALESCE(last_heartbeat_at, created_at) FROM agents WHERE id = $1",
    )
    .bind(agent_id)
    .fetch_one(tx.conn())
    .await?;
    let assigned = crate::engine::db::query(
        "SELECT 1 FROM issues i WHERE i.company_id = $1 AND i.assignee_agent_id = $2 \
         AND i.status IN ('todo', 'in_progress') AND i.conversation_agent_id IS NULL \
         AND NOT EXISTS (SELECT 1 FROM issue_blockers b JOIN issues bi ON bi.id = b.blocked_by_issue_id \
                         WHERE b.issue_id = i.id AND bi.status NOT IN ('done', 'cancelled')) \
         AND NOT EXISTS (SELECT 1 FROM issue_thread_interactions t WHERE t.issue_id = i.id \
                         AND t.status = 'pending' AND t.created_by_agent_id = $2) \
         AND NOT EXISTS (SELECT 1 FROM heartbeat_runs r WHERE r.issue_id = i.id \
                         AND r.agent_id = $2 AND r.status IN ('queued', 'running')) \
         LIMIT 1",
    )
    .bind(&company_id)
    .bind(agent_id)
    .fetch_optional(tx.conn())
    .await?;
    if assigned.is_some() {
        return Ok(Some("assigned_task"));
    }
    let commented = crate::engine::db::query(
        "SELECT 1 FROM issues i JOIN issue_comments c ON c.issue_id = i.id \
         WHERE i.company_id = $1 AND i.assignee_agent_id = $2 AND i.status NOT IN ('done', 'cancelled') \
         AND i.conversation_agent_id IS NULL \
         AND c.created_at > $3 AND c.deleted_at IS NULL \
         AND (c.author_agent_id IS NULL OR c.author_agent_id <> $2) LIMIT 1",
    )
    .bind(&company_id)
    .bind(agent_id)
    .bind(&since)
    .fetch_optional(tx.conn())
    .await?;
    if commented.is_some() {
        return Ok(Some("new_comment"));
    }
    let missed = crate::engine::db::query(
        "SELECT 1 FROM agent_wakeup_requests WHERE agent_id = $1 AND created_at > $2 \
         AND source <> 'timer' AND status = 'skipped' \
         AND skip_reason IN ('disabled_by_policy', 'agent_paused', 'budget_blocked') LIMIT 1",
    )
    .bind(agent_id)
    .bind(&since)
    .fetch_optional(tx.conn())
    .await?;
    Ok(missed.map(|_| "missed_wake"))
}
