//! Compact now: the board asks the assignee of a task to compact its session
//! for the task. It is an ordinary wake (the one queue) whose reason says
//! so; the run resumes the session and sends the CLI's own compaction
//! command instead of a prompt.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::context::{compaction_prompt, COMPACT_REASON};
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::model::Issue;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::wakes::queue::{Wake, Woken};
use crate::{Error, Result, Store};

/// Queues the compaction run of the task's assignee. 409 without an
/// assignee, a session or while a run of the task is queued or running;
/// 422 when the assignee's adapter cannot compact.
pub async fn request_compaction(store: &Store, actor: &Actor, issue: &Issue) -> Result<Woken> {
    let mut tx = store.begin().await?;
    let Some(agent_id) = issue.assignee_agent_id.clone() else {
        return Err(conflict("the task has no assigned agent"));
    };
    let agent = crate::org::agents::brief_in(&mut tx, &agent_id).await?;
    if compaction_prompt(&agent.adapter_type).is_none() {
        return Err(Error::Rule(format!(
            "{} cannot compact a session: its CLI has no compaction a run can ask for",
            agent.adapter_type
        )));
    }
    let session = crate::engine::db::query(
        "SELECT session_display_id, context_tokens FROM agent_task_sessions \
         WHERE agent_id = $1 AND adapter_type = $2 AND task_key = $3",
    )
    .bind(&agent.id)
    .bind(&agent.adapter_type)
    .bind(&issue.id)
    .fetch_optional(tx.conn())
    .await?;
    let (session_id, tokens) = match &session {
        Some(row) => (
            row.opt_text("session_display_id")?,
            row.try_get::<Option<i64>, _>("context_tokens")?,
        ),
        None => (None, None),
    };
    let Some(session_id) = session_id else {
        return Err(conflict(
            "the assignee has no session for this task to compact",
        ));
    };
    let live: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE agent_id = $1 AND issue_id = $2 \
         AND status IN ('queued', 'running') LIMIT 1",
    )
    .bind(&agent.id)
    .bind(&issue.id)
    .fetch_optional(tx.conn())
    .await?;
    if live.is_some() {
        return Err(conflict(
            "a run of this task is queued or running; compact once it has finished",
        ));
    }
    let woken = crate::wakes::enqueue::enqueue_in(
        &mut tx,
        actor,
        Wake {
            agent_id: agent.id.clone(),
            source: WakeSource::OnDemand,
            trigger_detail: Some("manual".into()),
            reason: Some(COMPACT_REASON.into()),
            payload: Some(json!({ "intent": "compact_context", "issueId": issue.id })),
            issue_id: Some(issue.id.clone()),
            idempotency_key: None,
        },
    )
    .await?;
    let Some(run) = &woken.run else {
        let why = woken
            .request
            .skip_reason
            .map(|r| r.as_str().to_string())
            .unwrap_or_else(|| "skipped".into());
        return Err(conflict(&format!("the assignee cannot run now ({why})")));
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueContextCompactionRequested,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "agentId": agent.id,
                "runId": run.id,
                "sessionId": session_id,
                "contextTokens": tokens,
            }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(woken)
}

fn conflict(message: &str) -> Error {
    Error::Conflict {
        message: message.to_string(),
        details: None,
    }
}
