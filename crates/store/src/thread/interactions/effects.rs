//! What a card's resolution does beyond its own row: a confirmation a
//! person answered hands the task back to the agent that asked, and the
//! task's assignee is woken with the answer.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::interaction::{
    Interaction, InteractionKind as K, InteractionStatus as S, Resolution,
};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::wakes::queue::Wake;
use crate::{Result, Tx};

/// A person's answer to an agent's confirmation hands the task back to the
/// agent to act on it: out of review into `todo` (a blocked task stays
/// blocked). This is the
/// answer's effect, not a status move anyone asked for, so it is not held
/// to the manual transition table (review to todo is not a manual move).
pub(crate) async fn return_to_author(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    ts: &str,
) -> Result<()> {
    let Some(author) = card.created_by_agent_id.clone() else {
        return Ok(());
    };
    let handed_over = issue.status == IssueStatus::InReview
        && (issue.assignee_agent_id.as_deref() == Some(author.as_str())
            || issue.assignee_user_id.is_some());
    let mut after = issue.clone();
    let mut changes = serde_json::Map::new();
    if handed_over {
        after.status = IssueStatus::Todo;
        after.assignee_agent_id = Some(author.clone());
        after.assignee_user_id = None;
        after.checkout_run_id = None;
        after.execution_run_id = None;
        after.execution_locked_at = None;
        changes.insert(
            "status".into(),
            json!({ "from": issue.status.as_str(), "to": "todo" }),
        );
        if issue.assignee_agent_id != after.assignee_agent_id {
            changes.insert(
                "assigneeAgentId".into(),
                json!({ "from": issue.assignee_agent_id, "to": author }),
            );
        }
        crate::issues::table::write(tx, &after, ts).await?;
    }
    if changes.is_empty() {
        return Ok(());
    }
    activity::record(
        tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueUpdated,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({ "identifier": issue.identifier, "changes": changes,
                "source": "request_confirmation_accept", "interactionId": card.id }),
        },
    )
    .await?;
    crate::wakes::loops::reset(tx, &issue.id).await?;
    Ok(())
}

/// Wakes the task's assignee with the resolution in its wake payload (and
/// so in `PAPERCLIP_WAKE_PAYLOAD_JSON`); one wake per card and status.
pub(crate) async fn wake(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    resolution: Resolution,
) -> Result<()> {
    let Some(agent) = issue.assignee_agent_id.clone() else {
        return Ok(());
    };
    if issue.status.is_terminal() {
        return Ok(());
    }
    let mut payload = json!({
        "issueId": issue.id, "taskId": issue.id, "identifier": issue.identifier,
        "interactionId": card.id, "interactionKind": card.kind.as_str(),
        "interactionStatus": card.status.as_str(), "sourceCommentId": card.source_comment_id,
        "sourceRunId": card.source_run_id, "wakeReason": "issue_commented",
        "source": format!("issue.interaction.{}", resolution.as_str()),
    });
    let result = card.result.clone().unwrap_or(Value::Null);
    match card.kind {
        K::AskUserQuestions => {
            if let Some(summary) = result["summaryMarkdown"].as_str() {
                let summary: String = summary.chars().take(12_000).collect();
                payload["questionResponse"] =
                    json!({ "interactionId": card.id, "summaryMarkdown": summary });
            }
        }
        K::RequestCheckboxConfirmation => {
            payload["checkboxSelection"] = json!({ "prompt": card.payload["prompt"],
                "selectedOptionIds": result["selectedOptionIds"] });
        }
        K::RequestConfirmation
            if paperclip_core::interaction_payload::document_target(&card.payload).is_some() =>
        {
            payload["planReviewInteraction"] = json!({ "id": card.id, "kind": card.kind.as_str(),
                "status": card.status.as_str(), "target": card.payload["target"], "result": result });
        }
        _ => {}
    }
    if card.status == S::Rejected {
        if let Some(reason) = result["reason"].as_str() {
            payload["paperclipAgentMessage"] =
                json!({ "text": reason, "source": "interaction_rejection" });
        }
    }
    let key = match resolution {
        Resolution::Respond => format!("question-response:{}", card.id),
        Resolution::Verdicts => format!("interaction:{}:verdicts:{}", card.id, card.updated_at),
        _ => format!("interaction:{}:{}", card.id, card.status.as_str()),
    };
    crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        Wake {
            agent_id: agent,
            source: WakeSource::Automation,
            trigger_detail: Some("system".into()),
            reason: Some("issue_commented".into()),
            payload: Some(payload),
            issue_id: Some(issue.id.clone()),
            idempotency_key: Some(key),
        },
    )
    .await?;
    Ok(())
}
