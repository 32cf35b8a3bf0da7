//! Agent Chat's rules inside other flows' transactions: what a change may
//! not do to a chat, no subtasks, what the chat's person writing does (`/new`
//! starts a fresh session), and where a chat goes after its agent's turn.
//! Apart from `chat.rs` (which makes chats) so the flows that use these
//! rules do not import the task creation that chat.rs uses.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::chat::{self, ConversationState};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{HeartbeatRun, Issue};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{now, Error, Result, Tx};

/// What a change through `PATCH` may not do to a chat: carry a message (a
/// message goes through the comments route, with its request id), close
/// it, or give it to anyone else.
pub(crate) fn check_patch(before: &Issue, after: &Issue, commented: bool) -> Result<()> {
    if before.conversation_agent_id.is_none() {
        return Ok(());
    }
    if commented {
        return Err(Error::rule(
            "Send chat messages through POST /api/issues/{id}/comments with a clientRequestId",
        ));
    }
    if !chat::status_allowed(after.status) {
        return Err(Error::rule("A chat cannot be closed (done or cancelled)"));
    }
    if after.assignee_agent_id != before.assignee_agent_id
        || after.assignee_user_id != before.assignee_user_id
    {
        return Err(Error::rule(
            "A chat's agent and person are fixed: it cannot be reassigned",
        ));
    }
    Ok(())
}

/// A chat has no subtasks: real work is an ordinary task of a project.
pub(crate) async fn refuse_subtask(tx: &mut Tx, parent_id: &str) -> Result<()> {
    let chat: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM issues WHERE id = $1 AND conversation_agent_id IS NOT NULL",
    )
    .bind(parent_id)
    .fetch_all(tx.conn())
    .await?
    .pop();
    match chat {
        Some(_) => Err(Error::rule("Conversations cannot have new subtasks")),
        None => Ok(()),
    }
}

/// What the chat's person writing does, inside the comment's transaction:
/// `/new` starts a fresh session (generation + 1, the comment as boundary,
/// the agent's saved session for the chat forgotten) and wakes nobody;
/// any other message makes the chat active. `true`: the message is `/new`.
pub(crate) async fn on_person_comment(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    comment_id: &str,
    body: &str,
) -> Result<bool> {
    let Some(agent_id) = issue.conversation_agent_id.as_deref() else {
        return Ok(false);
    };
    if !actor.is_board() || actor.user_id() != issue.conversation_user_id.as_deref() {
        return Ok(false);
    }
    let ts = now();
    if !chat::is_reset(body) {
        set_state(
            tx,
            &issue.id,
            IssueStatus::InProgress,
            ConversationState::Active,
            &ts,
        )
        .await?;
        return Ok(false);
    }
    let generation = issue.conversation_session_generation + 1;
    crate::engine::db::query(
        "UPDATE issues SET conversation_session_generation = $2, \
         conversation_boundary_comment_id = $3, status = 'in_review', \
         conversation_state = 'waiting', updated_at = $4 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(generation)
    .bind(comment_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE issue_comments SET conversation_session_generation = $2 WHERE id = $1",
    )
    .bind(comment_id)
    .bind(generation)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "DELETE FROM agent_task_sessions WHERE agent_id = $1 AND task_key = $2",
    )
    .bind(agent_id)
    .bind(&issue.id)
    .execute(tx.conn())
    .await?;
    activity::record(
        tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueConversationSessionStarted,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "commentId": comment_id,
                "conversationSessionGeneration": generation,
            }),
        },
    )
    .await?;
    Ok(true)
}

async fn set_state(
    tx: &mut Tx,
    issue_id: &str,
    status: IssueStatus,
    state: ConversationState,
    ts: &str,
) -> Result<()> {
    crate::engine::db::query(
        "UPDATE issues SET status = $2, conversation_state = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(issue_id)
    .bind(status)
    .bind(state.as_str())
    .bind(ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// After a turn of the chat's agent: parked for the person when the agent
/// answered in this run and they have not written since (no run of the
/// agent queued for the chat), else still active.
pub(crate) async fn settle_turn(tx: &mut Tx, run: &HeartbeatRun) -> Result<()> {
    let Some(issue_id) = run.issue_id.as_deref() else {
        return Ok(());
    };
    let row = crate::engine::db::query(
        "SELECT conversation_agent_id, \
         (SELECT COUNT(*) FROM issue_comments c WHERE c.issue_id = i.id AND c.created_by_run_id = $2 \
          AND c.author_agent_id = i.conversation_agent_id AND c.deleted_at IS NULL) AS replies, \
         (SELECT COUNT(*) FROM heartbeat_runs r WHERE r.issue_id = i.id AND r.status = 'queued' \
          AND r.id <> $2) AS queued \
         FROM issues i WHERE i.id = $1",
    )
    .bind(issue_id)
    .bind(&run.id)
    .fetch_all(tx.conn())
    .await?
    .pop();
    let Some(row) = row else {
        return Ok(());
    };
    if row.opt_text("conversation_agent_id")?.as_deref() != Some(run.agent_id.as_str()) {
        return Ok(());
    }
    let replied = row.int("replies")? > 0 && run.status.as_str() == "succeeded";
    let (status, state) = chat::after_turn(replied, row.int("queued")? > 0);
    set_state(tx, issue_id, status, state, &now()).await
}
