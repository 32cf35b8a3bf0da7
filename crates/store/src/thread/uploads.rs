//! An upload: the attachment row, and when an agent uploads inside its run,
//! the artifact work product that points at it, in one transaction.

use crate::audit::activity;
use crate::engine::row::RowExt;
use crate::thread::attachments::*;
use crate::thread::work_products::Source;
use crate::{now, Error, Result, Store};
use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::attachment::Attachment;
use paperclip_core::model::Issue;
use paperclip_core::work_product::{NewWorkProduct, WorkProductType, PAPERCLIP_PROVIDER};
use serde_json::json;

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
