//! Comments on issues: the conversation between the board and its agents.
//! Deleting a comment keeps the row (with `deletedAt` and who deleted it)
//! for the audit trail and hides it from reads. What a comment carries
//! beyond its body and author is in [`super::provenance`].

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::comment::DerivedAuthorSource;
use paperclip_core::issue::{comment_reopens, IssueStatus};
use paperclip_core::model::Comment;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::issues::reopen::{self, NotWoken, Reopened};
pub use crate::thread::provenance::Extras;
use crate::thread::provenance::{self, map, DeletedBy};
use crate::{new_id, now, Error, Result, Store, Tx};

/// A comment as posted: whether it reopened its task, and whom it did not
/// wake because the task stays closed.
#[derive(Debug, Clone)]
pub struct Posted {
    pub comment: Comment,
    /// The closed status the comment reopened the task from.
    pub reopened_from: Option<IssueStatus>,
    pub not_woken: Vec<NotWoken>,
}

/// A new comment, or with a `client_request_id` already used on the task by
/// the same author, the comment that request made: no second row, no
/// activity, no wakes, and the same answer, so a retry reads the same.
pub async fn create(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    body: String,
    client_request_id: Option<String>,
) -> Result<Comment> {
    let extras = Extras::default();
    Ok(post(
        store,
        actor,
        issue_id,
        body,
        client_request_id,
        None,
        &extras,
    )
    .await?
    .comment)
}

/// [`create`], where the comment may reopen a done or cancelled task
/// (`reopen`: the caller's explicit choice; see `comment_reopens`) and
/// carry `extras`. A retry answers with the comment only: the reopen was
/// the first request's.
pub async fn post(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    body: String,
    client_request_id: Option<String>,
    reopen: Option<bool>,
    extras: &Extras,
) -> Result<Posted> {
    // Twice at most: a retry racing the first request on Postgres loses on
    // the unique index, and then finds the winner's comment.
    for _ in 0..2 {
        let mut tx = store.begin().await?;
        let mut issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
        if issue.status.is_terminal() {
            // Closed work may be reopened: read it again under its lock.
            tx.lock_row(crate::Locked::Issue, &issue.id).await?;
            issue = crate::issues::table::load_in(&mut tx, &issue.id).await?;
        }
        if let Some(request) = &client_request_id {
            if let Some(existing) = by_request(&mut tx, &issue.id, request).await? {
                tx.rollback().await?;
                return Ok(Posted {
                    comment: replay(actor, existing, request)?,
                    reopened_from: None,
                    not_woken: Vec::new(),
                });
            }
        }
        let by = reopen::reopener(actor, &issue);
        let agent_assignee = issue.assignee_agent_id.is_some();
        let mut reopened = None;
        if comment_reopens(issue.status, by, agent_assignee, reopen) {
            let asked = reopen == Some(true);
            if let Some((after, r)) = reopen::for_comment(&mut tx, actor, &issue, asked).await? {
                issue = after;
                reopened = Some(r);
            }
        }
        match insert_with(
            &mut tx,
            actor,
            &issue,
            body.clone(),
            client_request_id.as_deref(),
            reopened.as_ref(),
            extras,
        )
        .await
        {
            Ok(mut posted) => {
                tx.commit().await?;
                posted.reopened_from = reopened.map(|r| r.from);
                return Ok(posted);
            }
            Err(Error::Database(e))
                if client_request_id.is_some()
                    && e.as_database_error()
                        .is_some_and(|d| d.is_unique_violation()) =>
            {
                tx.rollback().await?;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::conflict(
        "The comment's clientRequestId is being used by another request; retry",
        Some(json!({ "clientRequestId": client_request_id })),
    ))
}

async fn by_request(tx: &mut Tx, issue_id: &str, request: &str) -> Result<Option<Comment>> {
    let row = crate::engine::db::query(
        "SELECT * FROM issue_comments WHERE issue_id = $1 AND client_request_id = $2",
    )
    .bind(issue_id)
    .bind(request)
    .fetch_optional(tx.conn())
    .await?;
    row.as_ref().map(map).transpose()
}

/// The earlier comment, if it is the same author's; a request id is not a
/// way to read or claim someone else's comment.
fn replay(actor: &Actor, existing: Comment, request: &str) -> Result<Comment> {
    let same = existing.author_agent_id.as_deref() == actor.agent_id()
        && existing.author_user_id.as_deref() == actor.user_id();
    if !same {
        return Err(Error::conflict(
            "Another author already used this clientRequestId on the task",
            Some(json!({ "clientRequestId": request })),
        ));
    }
    Ok(existing)
}

/// Adds a comment inside the caller's transaction, with its activity row, and
/// wakes whoever it concerns: agents it @mentions, and the issue's assignee
/// when someone else wrote it (once, for its reopening, when `reopened`).
/// On a task that stays closed nobody is woken; `not_woken` names them.
pub(crate) async fn insert(
    tx: &mut Tx,
    actor: &Actor,
    issue: &paperclip_core::model::Issue,
    body: String,
    client_request_id: Option<&str>,
    reopened: Option<&Reopened>,
) -> Result<Posted> {
    let extras = Extras::default();
    insert_with(tx, actor, issue, body, client_request_id, reopened, &extras).await
}

/// [`insert`], with what the writer added beside the body.
pub(crate) async fn insert_with(
    tx: &mut Tx,
    actor: &Actor,
    issue: &paperclip_core::model::Issue,
    body: String,
    client_request_id: Option<&str>,
    reopened: Option<&Reopened>,
    extras: &Extras,
) -> Result<Posted> {
    let (company_id, issue_id, identifier) = (
        issue.company_id.as_str(),
        issue.id.as_str(),
        issue.identifier.as_str(),
    );
    if body.trim().is_empty() {
        return Err(Error::invalid("body", "Comment body must not be empty"));
    }
    let id = new_id();
    let ts = now();
    let derived = provenance::derived_author(tx, actor, company_id).await?;
    // Only an agent acts for someone; a person's comment is their own.
    let on_behalf_of = extras
        .on_behalf_of
        .as_deref()
        .filter(|_| actor.agent_id().is_some());
    crate::engine::db::query(
        "INSERT INTO issue_comments (id, company_id, issue_id, author_agent_id, author_user_id, \
         author_type, created_by_run_id, body, created_at, updated_at, client_request_id, \
         on_behalf_of_user_id, derived_author_agent_id, derived_created_by_run_id, \
         derived_author_source, presentation, metadata) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15, $16)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(issue_id)
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(actor.kind.as_str())
    .bind(actor.run_id.as_deref())
    .bind(&body)
    .bind(&ts)
    .bind(client_request_id)
    .bind(on_behalf_of)
    .bind(derived.as_ref().map(|d| d.agent_id.as_str()))
    .bind(derived.as_ref().map(|d| d.run_id.as_str()))
    .bind(
        derived
            .as_ref()
            .map(|_| DerivedAuthorSource::RunId.as_str()),
    )
    .bind(extras.presentation.as_ref().map(|p| json!(p).to_string()))
    .bind(extras.metadata.as_ref().map(|m| json!(m).to_string()))
    .execute(tx.conn())
    .await?;
    // A chat's `/new` starts a fresh session instead of waking its agent.
    let reset = crate::issues::chat_rules::on_person_comment(tx, actor, issue, &id, &body).await?;
    let mut concerned = concerned(tx, actor, issue, &body).await?;
    if reset {
        concerned.clear();
    }
    let closed = issue.status.is_terminal();
    let not_woken = match closed {
        true => {
            let ids: Vec<&str> = concerned.iter().map(|(a, _)| a.as_str()).collect();
            reopen::not_woken(tx, issue, &ids).await?
        }
        false => Vec::new(),
    };
    let mut details =
        json!({ "identifier": identifier, "commentId": id, "bodySnippet": snippet(&body) });
    if !not_woken.is_empty() {
        details["notWoken"] = not_woken
            .iter()
            .map(|n| json!({ "agentId": n.agent_id, "reason": n.reason }))
            .collect();
    }
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::IssueCommentAdded,
            entity_type: EntityType::Issue,
            entity_id: issue_id,
            details,
        },
    )
    .await?;
    if actor.is_board() {
        // The board joining in is progress: the loop count starts over.
        crate::wakes::loops::reset(tx, issue_id).await?;
    }
    crate::thread::interactions::cards::supersede_by_comment(tx, actor, issue, &id, &ts).await?;
    if !closed {
        for (agent, reason) in &concerned {
            let assignee = issue.assignee_agent_id.as_deref() == Some(agent.as_str());
            match reopened.filter(|_| assignee) {
                Some(r) => reopen::wake(tx, actor, issue, r, Some(&id)).await?,
                None => wake(tx, actor, issue, agent, &id, reason).await?,
            }
        }
    }
    Ok(Posted {
        comment: get_in(tx, &id).await?,
        reopened_from: None,
        not_woken,
    })
}

/// Whom a comment concerns: the agents it @mentions, and the assignee when
/// someone else wrote it; in agent id order, as every multi-agent wake
/// locks agent rows, so two concurrent comments cannot deadlock.
async fn concerned(
    tx: &mut Tx,
    actor: &Actor,
    issue: &paperclip_core::model::Issue,
    body: &str,
) -> Result<Vec<(String, &'static str)>> {
    let author = actor.agent_id();
    let mentions = paperclip_core::naming::mentioned_tokens(body);
    let mut woken: Vec<(String, &'static str)> = Vec::new();
    if !mentions.is_empty() {
        let agents: Vec<(String, String, String)> = crate::engine::db::query_as(
            "SELECT id, name, url_key FROM agents WHERE company_id = $1",
        )
        .bind(&issue.company_id)
        .fetch_all(tx.conn())
        .await?;
        for (id, name, url_key) in agents {
            let named = mentions
                .iter()
                .any(|m| *m == url_key || *m == name.to_lowercase());
            if named && Some(id.as_str()) != author && !woken.iter().any(|(w, _)| *w == id) {
                woken.push((id, "issue_comment_mentioned"));
            }
        }
    }
    if let Some(assignee) = &issue.assignee_agent_id {
        if Some(assignee.as_str()) != author && !woken.iter().any(|(w, _)| w == assignee) {
            woken.push((assignee.clone(), "issue_commented"));
        }
    }
    woken.sort();
    Ok(woken)
}

async fn wake(
    tx: &mut Tx,
    actor: &Actor,
    issue: &paperclip_core::model::Issue,
    agent_id: &str,
    comment_id: &str,
    reason: &str,
) -> Result<()> {
    let mut payload = json!({ "issueId": issue.id, "commentId": comment_id });
    let mut idempotency_key = None;
    if issue.conversation_agent_id.as_deref() == Some(agent_id) {
        // A chat turn: each message wakes its agent once (upstream's key).
        payload["wakeCommentId"] = json!(comment_id);
        payload["conversationMode"] = json!(true);
        payload["conversationSessionGeneration"] = json!(issue.conversation_session_generation);
        idempotency_key = Some(format!("conversation-comment:{comment_id}"));
    }
    crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        crate::wakes::queue::Wake {
            agent_id: agent_id.to_string(),
            source: paperclip_core::heartbeat::WakeSource::Automation,
            trigger_detail: Some("system".to_string()),
            reason: Some(reason.to_string()),
            payload: Some(payload),
            issue_id: Some(issue.id.clone()),
            idempotency_key,
        },
    )
    .await?;
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// Comments of an issue; with `after`, only those newer than that comment
/// (the heartbeat's "what is new since I last looked").
pub async fn list(
    store: &Store,
    issue_id: &str,
    after: Option<&str>,
    order: Order,
    limit: i64,
) -> Result<Vec<Comment>> {
    let direction = if order == Order::Asc { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT * FROM issue_comments WHERE issue_id = $1 AND deleted_at IS NULL \
         AND (id > $2 OR $2 IS NULL) ORDER BY id {direction} LIMIT $3"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(issue_id)
        .bind(after)
        .bind(limit)
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, issue_id: &str, comment_id: &str) -> Result<Comment> {
    let row = crate::engine::db::query(
        "SELECT * FROM issue_comments WHERE id = $1 AND issue_id = $2 AND deleted_at IS NULL",
    )
    .bind(comment_id)
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Comment"))
}

/// The comments of `issue_id` with these ids, in one query, in the order of
/// `ids`; an id deleted or not on the task is left out.
pub async fn by_ids(store: &Store, issue_id: &str, ids: &[&str]) -> Result<Vec<Comment>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list =
        crate::engine::sql::json_values(store.backend(), "$2", crate::engine::sql::ListOf::Ids);
    let sql = format!(
        "SELECT * FROM issue_comments WHERE issue_id = $1 AND deleted_at IS NULL \
         AND id IN {list}"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(issue_id)
        .bind(crate::engine::sql::json_array(ids.iter()))
        .fetch_all(store.pool())
        .await?;
    let found = rows.iter().map(map).collect::<Result<Vec<Comment>>>()?;
    Ok(ids
        .iter()
        .filter_map(|id| found.iter().find(|c| c.id == *id).cloned())
        .collect())
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<Comment> {
    let row = crate::engine::db::query("SELECT * FROM issue_comments WHERE id = $1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Comment"))
}

pub async fn delete(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    comment_id: &str,
) -> Result<Comment> {
    let mut tx = store.begin().await?;
    let comment = get_in(&mut tx, comment_id).await?;
    if comment.issue_id != issue_id || comment.deleted_at.is_some() {
        return Err(Error::not_found("Comment"));
    }
    if let Some(agent) = actor.agent_id() {
        if comment.author_agent_id.as_deref() != Some(agent) {
            return Err(Error::rule("Agents can delete only their own comments"));
        }
    }
    let ts = now();
    let by = DeletedBy::of(&mut tx, actor, &comment.company_id).await?;
    provenance::mark_deleted(&mut tx, comment_id, &by, &ts).await?;
    let mut details = by.details();
    details["commentId"] = json!(comment_id);
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &comment.company_id,
            action: Action::IssueCommentDeleted,
            entity_type: EntityType::Issue,
            entity_id: issue_id,
            details,
        },
    )
    .await?;
    let comment = get_in(&mut tx, comment_id).await?;
    tx.commit().await?;
    Ok(comment)
}

fn snippet(body: &str) -> String {
    let mut s: String = body.chars().take(120).collect();
    if s.len() < body.len() {
        s.push('…');
    }
    s
}
