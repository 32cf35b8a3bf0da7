//! Issue attachments: the rows that say which stored object belongs to
//! which issue. The bytes are the server's (its storage under the data dir);
//! a row is written only after they are stored, and the server removes
//! them before the row is deleted. An upload from an agent's run also
//! records an `artifact` work product for it, in the same transaction.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::attachment::Attachment;
use paperclip_core::model::Issue;
use paperclip_core::work_product::{NewWorkProduct, WorkProductType, PAPERCLIP_PROVIDER};
use serde_json::json;

use crate::audit::activity;
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::thread::work_products::Source;
use crate::{now, Error, Result, Store, Tx};

const COLUMNS: &str = "id, company_id, issue_id, issue_comment_id, originating_run_id, asset_id, \
     provider, object_key, content_type, byte_size, sha256, original_filename, \
     created_by_agent_id, created_by_user_id, created_at, updated_at";

/// A stored object to record as an attachment of `issue`.
pub struct NewAttachment {
    pub id: String,
    pub asset_id: String,
    pub provider: String,
    pub object_key: String,
    pub content_type: String,
    pub byte_size: i64,
    pub sha256: String,
    pub original_filename: Option<String>,
    pub issue_comment_id: Option<String>,
}

pub async fn create(
    store: &Store,
    actor: &Actor,
    issue: &Issue,
    new: NewAttachment,
) -> Result<Attachment> {
    let mut tx = store.begin().await?;
    if let Some(comment_id) = &new.issue_comment_id {
        let row = crate::engine::db::query(
            "SELECT issue_id, author_agent_id, created_by_run_id FROM issue_comments WHERE id = $1",
        )
        .bind(comment_id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::rule("issueCommentId names no comment of this issue"))?;
        if row.text("issue_id")? != issue.id {
            return Err(Error::rule("issueCommentId names no comment of this issue"));
        }
        // An agent may hang a file only on its own comment of this run.
        if let Some(agent) = actor.agent_id() {
            let own = row.opt_text("author_agent_id")?.as_deref() == Some(agent)
                && row.opt_text("created_by_run_id")? == actor.run_id;
            if !own {
                return Err(Error::rule("issue_attachment_parent_run_mismatch"));
            }
        }
    }
    let ts = now();
    crate::engine::db::query(&format!(
        "INSERT INTO issue_attachments ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)"
    ))
    .bind(&new.id)
    .bind(&issue.company_id)
    .bind(&issue.id)
    .bind(new.issue_comment_id.as_deref())
    .bind(actor.run_id.as_deref())
    .bind(&new.asset_id)
    .bind(&new.provider)
    .bind(&new.object_key)
    .bind(&new.content_type)
    .bind(new.byte_size)
    .bind(&new.sha256)
    .bind(new.original_filename.as_deref())
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::on_issue(
        &mut tx,
        actor,
        issue,
        Action::IssueAttachmentAdded,
        json!({
            "attachmentId": new.id, "originalFilename": new.original_filename,
            "contentType": new.content_type, "byteSize": new.byte_size,
        }),
    )
    .await?;
    if let (Some(_), Some(run_id)) = (actor.agent_id(), &actor.run_id) {
        let product = NewWorkProduct {
            kind: WorkProductType::Artifact,
            provider: PAPERCLIP_PROVIDER.to_string(),
            title: new
                .original_filename
                .clone()
                .unwrap_or_else(|| "Attachment".into()),
            project_id: None,
            execution_workspace_id: None,
            runtime_service_id: None,
            external_id: Some(new.id.clone()),
            url: None,
            summary: None,
            metadata: Some(json!({ "attachmentId": new.id })),
            status: None,
            review_state: None,
            is_primary: None,
            health_status: None,
            created_by_run_id: Some(run_id.clone()),
        };
        crate::thread::work_products::create_in(
            &mut tx,
            actor,
            issue,
            &product,
            Source::RunAttachmentUpload,
        )
        .await?;
    }
    let attachment = get_in(&mut tx, &new.id).await?;
    tx.commit().await?;
    Ok(attachment)
}

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
