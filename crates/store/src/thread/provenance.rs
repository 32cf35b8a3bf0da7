//! A comment's provenance beyond its author: what it carries for the
//! thread (presentation, metadata), the person an agent wrote it for, the
//! agent run a board-written comment came from, and who deleted it.

use paperclip_core::actor::{Actor, LOCAL_BOARD_USER_ID};
use paperclip_core::comment::{
    CommentActorType, CommentMetadata, DerivedAuthorSource, Presentation,
};
use paperclip_core::model::Comment;
use serde_json::json;

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{Result, Tx};

/// What a comment's writer may add beside its body.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub presentation: Option<Presentation>,
    pub metadata: Option<CommentMetadata>,
    /// The person the writing agent acts for (its key's; see `Caller`).
    pub on_behalf_of: Option<String>,
}

/// The agent whose run a comment came from, when its author is the local
/// board naming that run (`X-Paperclip-Run-Id`): the original's lossless
/// `run_id` attribution. A signed-in person is a person, never an agent in
/// disguise, and an agent is its own author; neither is attributed.
pub(crate) struct Derived {
    pub agent_id: String,
    pub run_id: String,
}

pub(crate) async fn derived_author(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
) -> Result<Option<Derived>> {
    if actor.user_id() != Some(LOCAL_BOARD_USER_ID) {
        return Ok(None);
    }
    let Some(run_id) = actor.run_id.as_deref() else {
        return Ok(None);
    };
    Ok(run_in(tx, company_id, run_id)
        .await?
        .map(|(run_id, agent_id)| Derived { agent_id, run_id }))
}

/// The run, if it is one of the company's: `(run id, agent id)`. The board
/// may name any UUID as its run; only a real run is recorded.
async fn run_in(tx: &mut Tx, company_id: &str, run_id: &str) -> Result<Option<(String, String)>> {
    Ok(crate::engine::db::query_as(
        "SELECT CAST(id AS TEXT), CAST(agent_id AS TEXT) FROM heartbeat_runs \
         WHERE id = $1 AND company_id = $2",
    )
    .bind(run_id)
    .bind(company_id)
    .fetch_optional(tx.conn())
    .await?)
}

/// Who deletes a comment, as the original records it.
pub(crate) struct DeletedBy {
    pub kind: CommentActorType,
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
    pub run_id: Option<String>,
}

impl DeletedBy {
    pub(crate) async fn of(tx: &mut Tx, actor: &Actor, company_id: &str) -> Result<DeletedBy> {
        let run_id = match actor.run_id.as_deref() {
            Some(run) => run_in(tx, company_id, run).await?.map(|(id, _)| id),
            None => None,
        };
        Ok(DeletedBy {
            kind: actor.kind.into(),
            agent_id: actor.agent_id().map(str::to_string),
            user_id: actor.user_id().map(str::to_string),
            run_id,
        })
    }

    /// For the activity entry of the deletion.
    pub(crate) fn details(&self) -> serde_json::Value {
        json!({
            "deletedByType": self.kind,
            "deletedByAgentId": self.agent_id,
            "deletedByUserId": self.user_id,
            "deletedByRunId": self.run_id,
        })
    }
}

pub(crate) async fn mark_deleted(
    tx: &mut Tx,
    comment_id: &str,
    by: &DeletedBy,
    ts: &str,
) -> Result<()> {
    crate::engine::db::query(
        "UPDATE issue_comments SET deleted_at = $2, updated_at = $2, deleted_by_type = $3, \
         deleted_by_agent_id = $4, deleted_by_user_id = $5, deleted_by_run_id = $6 WHERE id = $1",
    )
    .bind(comment_id)
    .bind(ts)
    .bind(by.kind.as_str())
    .bind(by.agent_id.as_deref())
    .bind(by.user_id.as_deref())
    .bind(by.run_id.as_deref())
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// A stored presentation or metadata, read as the original reads it: a
/// value that no longer fits its shape is served as null rather than
/// failing the whole thread (only what passed the checks is ever written).
fn lenient<T: serde::de::DeserializeOwned>(value: Option<serde_json::Value>) -> Option<T> {
    value.and_then(|v| serde_json::from_value(v).ok())
}

pub(crate) fn map(row: &DbRow) -> Result<Comment> {
    Ok(Comment {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        issue_id: row.text("issue_id")?,
        author_agent_id: row.opt_text("author_agent_id")?,
        author_user_id: row.opt_text("author_user_id")?,
        on_behalf_of_user_id: row.opt_text("on_behalf_of_user_id")?,
        author_type: row.text("author_type")?,
        created_by_run_id: row.opt_text("created_by_run_id")?,
        derived_author_agent_id: row.opt_text("derived_author_agent_id")?,
        derived_created_by_run_id: row.opt_text("derived_created_by_run_id")?,
        derived_author_source: row.opt_stored::<DerivedAuthorSource, _>("derived_author_source")?,
        client_request_id: row.opt_text("client_request_id")?,
        conversation_session_generation: row
            .try_get::<Option<i64>, _>("conversation_session_generation")?,
        body: row.text("body")?,
        presentation: lenient(row.opt_json("presentation")?),
        metadata: lenient(row.opt_json("metadata")?),
        deleted_at: row.opt_text("deleted_at")?,
        deleted_by_type: row.opt_stored::<CommentActorType, _>("deleted_by_type")?,
        deleted_by_agent_id: row.opt_text("deleted_by_agent_id")?,
        deleted_by_user_id: row.opt_text("deleted_by_user_id")?,
        deleted_by_run_id: row.opt_text("deleted_by_run_id")?,
        source_trust: None,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
