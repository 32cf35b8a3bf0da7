//! Issue attachments: the rows that say which stored object belongs to
//! which issue. The bytes are the server's (its storage under the data dir);
//! a row is written only after they are stored, and the server removes
//! them before the row is deleted. An upload from an agent's run also
//! records an `artifact` work product for it, in the same transaction.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::attachment::Attachment;
use serde_json::json;

use crate::audit::activity;
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{Result, Store, Tx};

pub(crate) const COLUMNS: &str =
    "id, company_id, issue_id, issue_comment_id, originating_run_id, asset_id, \
     provider, object_key, content_type, byte_size, sha256, original_filename, \
     created_by_agent_id, created_by_user_id, created_at, updated_at";

/// The issue's attachments, newest first.
pub async fn list(store: &Store, issue_id: &str) -> Result<Vec<Attachment>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM issue_attachments WHERE issue_id = $1 \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// `(company, key)` of a company's (or one issue's) objects in S3, for the
/// server to delete once their rows are gone.
pub async fn s3_objects(
    store: &Store,
    company_id: &str,
    issue_id: Option<&str>,
) -> Result<Vec<(String, String)>> {
    let rows = match issue_id {
        Some(issue) => {
            crate::engine::db::query(
                "SELECT company_id, object_key FROM issue_attachments \
                 WHERE issue_id = $1 AND provider = 's3'",
            )
            .bind(issue)
            .fetch_all(store.pool())
            .await?
        }
        None => {
            crate::engine::db::query(
                "SELECT company_id, object_key FROM issue_attachments \
                 WHERE company_id = $1 AND provider = 's3'",
            )
            .bind(company_id)
            .fetch_all(store.pool())
            .await?
        }
    };
    rows.iter()
        .map(|r| Ok((r.text("company_id")?, r.text("object_key")?)))
        .collect()
}

pub async fn get(store: &Store, id: &str) -> Result<Attachment> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM issue_attachments WHERE id = $1"),
        id,
        map,
        "Attachment",
    )
    .await
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Attachment> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {COLUMNS} FROM issue_attachments WHERE id = $1"),
        id,
        map,
        "Attachment",
    )
    .await
}

/// Deletes the row (the caller has removed the bytes) and logs it.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Attachment> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    let issue = crate::issues::table::load_in(&mut tx, &current.issue_id).await?;
    crate::engine::db::query("DELETE FROM issue_attachments WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    activity::on_issue(
        &mut tx,
        actor,
        &issue,
        Action::IssueAttachmentRemoved,
        json!({ "attachmentId": id }),
    )
    .await?;
    tx.commit().await?;
    Ok(current)
}

fn map(row: &DbRow) -> Result<Attachment> {
    let id = row.text("id")?;
    let content_path = Attachment::content_path_of(&id);
    Ok(Attachment {
        company_id: row.text("company_id")?,
        issue_id: row.text("issue_id")?,
        issue_comment_id: row.opt_text("issue_comment_id")?,
        originating_run_id: row.opt_text("originating_run_id")?,
        asset_id: row.text("asset_id")?,
        provider: row.text("provider")?,
        object_key: row.text("object_key")?,
        content_type: row.text("content_type")?,
        byte_size: row.int("byte_size")?,
        sha256: row.text("sha256")?,
        original_filename: row.opt_text("original_filename")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
        open_path: content_path.clone(),
        download_path: format!("{content_path}?download=1"),
        content_path,
        id,
    })
}
