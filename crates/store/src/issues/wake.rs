//! Who a task's change wakes: a newly assigned agent, and the assignee of a
//! task taken out of the backlog (upstream's rules: backlog waits).

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use serde_json::json;

use crate::{Result, Tx};

/// A newly assigned agent is woken, in the assigning transaction, unless the
/// work is already over, not started yet (backlog: upstream's rule, a
/// person queues work without it starting) or the agent assigned itself.
pub(crate) async fn wake_assignee(tx: &mut Tx, actor: &Actor, issue: &Issue) -> Result<()> {
    let Some(agent) = &issue.assignee_agent_id else {
        return Ok(());
    };
    let status = issue.status;
    if status.is_terminal()
        || status == IssueStatus::Backlog
        || actor.agent_id() == Some(agent.as_str())
    {
        return Ok(());
    }
    let payload = json!({ "issueId": issue.id, "identifier": issue.identifier });
    wake(
        tx,
        actor,
        issue,
        agent,
        WakeSource::Assignment,
        "issue_assigned",
        payload,
    )
    .await
}

/// The assignee of a task taken out of the backlog is woken (upstream's
/// `issue_status_changed`), unless it moved the task itself.
pub(crate) async fn wake_started(tx: &mut Tx, actor: &Actor, issue: &Issue) -> Result<()> {
    let Some(agent) = &issue.assignee_agent_id else {
        return Ok(());
    };
    if actor.agent_id() == Some(agent.as_str()) {
        return Ok(());
    }
    let payload =
        json!({ "issueId": issue.id, "identifier": issue.identifier, "mutation": "update" });
    wake(
        tx,
        actor,
        issue,
        agent,
        WakeSource::Automation,
        "issue_status_changed",
        payload,
    )
    .await
}

/// Enqueues `agent`'s wake for `issue` in the caller's transaction.
async fn wake(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    agent: &str,
    source: WakeSource,
    reason: &str,
    payload: serde_json::Value,
) -> Result<()> {
    crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        crate::wakes::queue::Wake {
            agent_id: agent.to_string(),
            source,
            trigger_detail: Some("system".to_string()),
            reason: Some(reason.to_string()),
            payload: Some(payload),
            issue_id: Some(issue.id.clone()),
            idempotency_key: None,
        },
    )
    .await?;
    Ok(())
}
