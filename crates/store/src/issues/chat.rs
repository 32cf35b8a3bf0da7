//! Agent Chat in the store: a chat is a task with a conversation agent and
//! person (one per company, agent and person: a unique index). Finding and
//! opening one, and a person's chats; its rules are in `chat_rules.rs`.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::chat;
use paperclip_core::input::NewIssue;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::issues::table::{load_in, COLUMNS};
use crate::{now, Error, Result, Store, Tx};

/// The person's chat with the agent, if they have one.
pub async fn find(
    store: &Store,
    company_id: &str,
    agent_id: &str,
    user_id: &str,
) -> Result<Option<Issue>> {
    let mut tx = store.begin().await?;
    let found = find_in(&mut tx, company_id, agent_id, user_id).await?;
    tx.rollback().await?;
    Ok(found)
}

async fn find_in(
    tx: &mut Tx,
    company_id: &str,
    agent_id: &str,
    user_id: &str,
) -> Result<Option<Issue>> {
    let row: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM issues WHERE company_id = $1 AND conversation_agent_id = $2 \
         AND conversation_user_id = $3",
    )
    .bind(company_id)
    .bind(agent_id)
    .bind(user_id)
    .fetch_all(tx.conn())
    .await?
    .pop();
    match row {
        Some((id,)) => Ok(Some(load_in(tx, &id).await?)),
        None => Ok(None),
    }
}

/// The person's chat with the agent, made when they have none: `Chat with
/// <agent>`, assigned to the agent, parked for the person (`in_review`,
/// waiting) so nothing runs until they write. The second of two racing
/// opens finds the first's chat.
pub async fn open(store: &Store, actor: &Actor, company_id: &str, agent_id: &str) -> Result<Issue> {
    let user_id = actor
        .user_id()
        .ok_or_else(|| Error::forbidden("Board user access required"))?;
    for _ in 0..2 {
        let mut tx = store.begin().await?;
        if let Some(found) = find_in(&mut tx, company_id, agent_id, user_id).await? {
            tx.rollback().await?;
            return Ok(found);
        }
        match create_in(&mut tx, store, actor, company_id, agent_id, user_id).await {
            Ok(issue) => {
                tx.commit().await?;
                return Ok(issue);
            }
            Err(Error::Database(e))
                if e.as_database_error()
                    .is_some_and(|d| d.is_unique_violation()) =>
            {
                tx.rollback().await?;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::conflict(
        "The chat is being opened by another request; retry",
        None,
    ))
}

async fn create_in(
    tx: &mut Tx,
    store: &Store,
    actor: &Actor,
    company_id: &str,
    agent_id: &str,
    user_id: &str,
) -> Result<Issue> {
    let (name,): (String,) =
        crate::engine::db::query_as("SELECT name FROM agents WHERE id = $1 AND company_id = $2")
            .bind(agent_id)
            .bind(company_id)
            .fetch_optional(tx.conn())
            .await?
            .ok_or_else(|| Error::not_found("Agent"))?;
    // Made in the backlog, which wakes nobody, then parked for the person.
    let input = NewIssue {
        title: chat::title(&name),
        description: None,
        status: Some(IssueStatus::Backlog),
        priority: None,
        project_id: None,
        goal_id: None,
        parent_id: None,
        assignee_agent_id: Some(agent_id.to_string()),
        assignee_user_id: None,
        billing_code: None,
        label_ids: None,
        blocked_by_issue_ids: None,
    };
    let made =
        crate::issues::create::create_in(tx, store.backend(), actor, company_id, &input, true)
            .await?;
    crate::engine::db::query(
        "UPDATE issues SET status = 'in_review', conversation_agent_id = $2, \
         conversation_user_id = $3, conversation_state = 'waiting', updated_at = $4 WHERE id = $1",
    )
    .bind(&made.id)
    .bind(agent_id)
    .bind(user_id)
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::IssueConversationOpened,
            entity_type: EntityType::Issue,
            entity_id: &made.id,
            details: json!({ "identifier": made.identifier, "agentId": agent_id }),
        },
    )
    .await?;
    load_in(tx, &made.id).await
}

/// A person's chat in a list: the chat, its agent, and its last message.
pub struct ChatSummary {
    pub issue: Issue,
    pub agent_name: String,
    pub last_body: Option<String>,
    pub last_at: Option<String>,
    pub last_by_agent: bool,
}

/// The person's chats in the company, most recently active first (one
/// query; a person has a chat per agent at most).
pub async fn list_for(store: &Store, company_id: &str, user_id: &str) -> Result<Vec<ChatSummary>> {
    let sql = format!(
        "SELECT {COLUMNS}, (SELECT a.name FROM agents a WHERE a.id = issues.conversation_agent_id) \
         AS agent_name, \
         (SELECT c.body FROM issue_comments c WHERE c.issue_id = issues.id AND c.deleted_at IS NULL \
          ORDER BY c.id DESC LIMIT 1) AS last_body, \
         (SELECT c.created_at FROM issue_comments c WHERE c.issue_id = issues.id AND c.deleted_at IS NULL \
          ORDER BY c.id DESC LIMIT 1) AS last_at, \
         (SELECT CAST(CASE WHEN c.author_agent_id IS NULL THEN 0 ELSE 1 END AS BIGINT) FROM issue_comments c \
          WHERE c.issue_id = issues.id AND c.deleted_at IS NULL ORDER BY c.id DESC LIMIT 1) AS last_by_agent \
         FROM issues WHERE company_id = $1 AND conversation_user_id = $2 \
         AND conversation_agent_id IS NOT NULL \
         ORDER BY issues.updated_at DESC"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(user_id)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|row| {
            Ok(ChatSummary {
                issue: crate::issues::table::map(row)?,
                agent_name: row.opt_text("agent_name")?.unwrap_or_default(),
                last_body: row.opt_text("last_body")?,
                last_at: row.opt_text("last_at")?,
                last_by_agent: row.try_get::<Option<i64>, _>("last_by_agent")?.unwrap_or(0) == 1,
            })
        })
        .collect()
}

/// Whether the company has any chat: one probe of the chat index.
pub async fn company_has_chats(store: &Store, company_id: &str) -> Result<bool> {
    let found: Option<(i64,)> = crate::engine::db::query_as(
        "SELECT CAST(1 AS BIGINT) FROM issues WHERE company_id = $1 \
         AND conversation_agent_id IS NOT NULL LIMIT 1",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?
    .pop();
    Ok(found.is_some())
}
