//! Issue documents (a plan, a spec) keyed per issue, with an append-only
//! revision history: every write adds revision n+1 and never edits an old one.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::input::DocumentPut;
use paperclip_core::model::{Document, DocumentRevision};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store, Tx};

pub struct Written {
    pub document: Document,
    pub created: bool,
}

pub async fn put(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    key: &str,
    input: DocumentPut,
) -> Result<Written> {
    check_key(key)?;
    paperclip_core::limits::Validate::validate(&input)?;
    let mut tx = store.begin().await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    crate::issues::ownership::check_run_ownership(&mut tx, actor, &issue).await?;
    let existing = get_in(&mut tx, &issue.id, key).await?;
    if let Some(doc) = &existing {
        refuse_locked(doc)?;
    }
    if let (Some(base), Some(doc)) = (&input.base_revision_id, &existing) {
        if base != &doc.latest_revision_id {
            return Err(Error::conflict(
                "Document was changed since that revision",
                Some(
                    json!({ "latestRevisionId": doc.latest_revision_id, "latestRevisionNumber": doc.latest_revision_number }),
                ),
            ));
        }
    }
    let ts = now();
    let revision_id = new_id();
    let revision_number = existing
        .as_ref()
        .map_or(1, |d| d.latest_revision_number + 1);
    let format = "markdown";
    let document_id = match &existing {
        Some(doc) => {
            crate::engine::db::query(
                "UPDATE issue_documents SET title = $2, format = $3, body = $4, latest_revision_id = $5, \
                 latest_revision_number = $6, updated_by_agent_id = $7, updated_by_user_id = $8, \
                 updated_at = $9 WHERE id = $1",
            )
            .bind(&doc.id)
            .bind(input.title.as_deref())
            .bind(format)
            .bind(&input.body)
            .bind(&revision_id)
            .bind(revision_number)
            .bind(actor.agent_id())
            .bind(actor.user_id())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
            doc.id.clone()
        }
        None => {
            let id = new_id();
            crate::engine::db::query(
                "INSERT INTO issue_documents (id, company_id, issue_id, doc_key, title, format, body, \
                 latest_revision_id, latest_revision_number, created_by_agent_id, created_by_user_id, \
                 updated_by_agent_id, updated_by_user_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $10, $11, $12, $12)",
            )
            .bind(&id)
            .bind(&issue.company_id)
            .bind(&issue.id)
            .bind(key)
            .bind(input.title.as_deref())
            .bind(format)
            .bind(&input.body)
            .bind(&revision_id)
            .bind(revision_number)
            .bind(actor.agent_id())
            .bind(actor.user_id())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
            id
        }
    };
    crate::engine::db::query(
        "INSERT INTO issue_document_revisions (id, company_id, document_id, revision_number, title, \
         format, body, change_summary, created_by_agent_id, created_by_user_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&revision_id)
    .bind(&issue.company_id)
    .bind(&document_id)
    .bind(revision_number)
    .bind(input.title.as_deref())
    .bind(format)
    .bind(&input.body)
    .bind(input.change_summary.as_deref())
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let created = existing.is_none();
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: if created {
                Action::IssueDocumentCreated
            } else {
                Action::IssueDocumentUpdated
            },
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "key": key,
                "title": input.title,
                "documentId": document_id,
                "revisionNumber": revision_number,
                "changeSummary": input.change_summary,
            }),
        },
    )
    .await?;
    if !created {
        // A card asking about an older revision no longer asks about what
        // the document says.
        crate::thread::interactions::cards::expire_stale_targets(
            &mut tx,
            actor,
            &issue,
            key,
            &revision_id,
            &ts,
        )
        .await?;
    }
    let document = get_in(&mut tx, &issue.id, key)
        .await?
        .ok_or_else(|| Error::not_found("Document"))?;
    tx.commit().await?;
    Ok(Written { document, created })
}

pub async fn get(store: &Store, issue_id: &str, key: &str) -> Result<Document> {
    let issue = crate::issues::table::get(store, issue_id).await?;
    let row = crate::engine::db::query(
        "SELECT * FROM issue_documents WHERE issue_id = $1 AND doc_key = $2",
    )
    .bind(&issue.id)
    .bind(key)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Document"))
}

async fn get_in(tx: &mut Tx, issue_id: &str, key: &str) -> Result<Option<Document>> {
    let row = crate::engine::db::query(
        "SELECT * FROM issue_documents WHERE issue_id = $1 AND doc_key = $2",
    )
    .bind(issue_id)
    .bind(key)
    .fetch_optional(tx.conn())
    .await?;
    row.as_ref().map(map).transpose()
}

pub async fn list(store: &Store, issue_id: &str) -> Result<Vec<Document>> {
    let issue = crate::issues::table::get(store, issue_id).await?;
    of_issue(store, &issue.id).await
}

/// The documents of a task already found by id, by key.
pub async fn of_issue(store: &Store, issue_id: &str) -> Result<Vec<Document>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_documents WHERE issue_id = $1 ORDER BY doc_key",
    )
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Newest revision first.
pub async fn revisions(store: &Store, issue_id: &str, key: &str) -> Result<Vec<DocumentRevision>> {
    let document = get(store, issue_id, key).await?;
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_document_revisions WHERE document_id = $1 ORDER BY revision_number DESC",
    )
    .bind(&document.id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(|r| map_revision(r, &document)).collect()
}

/// Makes an old revision's title and body the document's again, as a new
/// revision (history stays append-only). Revisions never change, so reading
/// it before the write races nothing; the write itself is `put`'s.
pub async fn restore(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    key: &str,
    revision_id: &str,
) -> Result<Document> {
    let document = get(store, issue_id, key).await?;
    let row = crate::engine::db::query(
        "SELECT * FROM issue_document_revisions WHERE document_id = $1 AND id = $2",
    )
    .bind(&document.id)
    .bind(revision_id)
    .fetch_optional(store.pool())
    .await?;
    let revision = row
        .as_ref()
        .map(|r| map_revision(r, &document))
        .transpose()?
        .ok_or_else(|| Error::not_found("Document revision"))?;
    let input = DocumentPut {
        title: revision.title,
        format: paperclip_core::input::DocumentFormat::Markdown,
        body: revision.body,
        change_summary: Some(format!("Restored revision {}", revision.revision_number)),
        base_revision_id: None,
    };
    Ok(put(store, actor, &document.issue_id, key, input)
        .await?
        .document)
}

pub async fn delete(store: &Store, actor: &Actor, issue_id: &str, key: &str) -> Result<Document> {
    let document = get(store, issue_id, key).await?;
    let mut tx = store.begin().await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    crate::issues::ownership::check_run_ownership(&mut tx, actor, &issue).await?;
    if let Some(current) = get_in(&mut tx, &issue.id, key).await? {
        refuse_locked(&current)?;
    }
    crate::engine::db::query("DELETE FROM issue_documents WHERE id = $1")
        .bind(&document.id)
        .execute(tx.conn())
        .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &document.company_id,
            action: Action::IssueDocumentDeleted,
            entity_type: EntityType::Issue,
            entity_id: &document.issue_id,
            details: json!({ "key": key, "documentId": document.id }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(document)
}

/// Keys are short slugs (`plan`, `design-notes`), so they are safe in URLs.
fn check_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "key",
            "Document key must be 1-64 characters of a-z, 0-9, - or _",
        ))
    }
}

fn map(row: &DbRow) -> Result<Document> {
    Ok(Document {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        issue_id: row.text("issue_id")?,
        key: row.text("doc_key")?,
        title: row.opt_text("title")?,
        format: row.text("format")?,
        body: row.text("body")?,
        latest_revision_id: row.text("latest_revision_id")?,
        latest_revision_number: row.int("latest_revision_number")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        updated_by_agent_id: row.opt_text("updated_by_agent_id")?,
        updated_by_user_id: row.opt_text("updated_by_user_id")?,
        locked_at: row.opt_text("locked_at")?,
        locked_by_agent_id: row.opt_text("locked_by_agent_id")?,
        locked_by_user_id: row.opt_text("locked_by_user_id")?,
        source_trust: None,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

/// 409 while the board has the document locked.
fn refuse_locked(document: &Document) -> Result<()> {
    match &document.locked_at {
        Some(at) => Err(Error::conflict(
            "Document is locked",
            Some(json!({ "key": document.key, "documentId": document.id, "lockedAt": at })),
        )),
        None => Ok(()),
    }
}

/// Locks (or unlocks) a document; doing it twice changes nothing and logs
/// nothing. The lock is read and written in one transaction, so a write
/// racing it either lands first or is refused.
pub async fn set_lock(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    key: &str,
    lock: bool,
) -> Result<Document> {
    let mut tx = store.begin().await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    let document = get_in(&mut tx, &issue.id, key)
        .await?
        .ok_or_else(|| Error::not_found("Document"))?;
    if document.locked_at.is_some() == lock {
        tx.rollback().await?;
        return Ok(document);
    }
    let ts = now();
    let (at, agent, user) = match lock {
        true => (Some(ts.as_str()), actor.agent_id(), actor.user_id()),
        false => (None, None, None),
    };
    crate::engine::db::query(
        "UPDATE issue_documents SET locked_at = $2, locked_by_agent_id = $3, locked_by_user_id = $4, \
         updated_at = $5 WHERE id = $1",
    )
    .bind(&document.id)
    .bind(at)
    .bind(agent)
    .bind(user)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: if lock {
                Action::IssueDocumentLocked
            } else {
                Action::IssueDocumentUnlocked
            },
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "key": key,
                "documentId": document.id,
                "title": document.title,
            }),
        },
    )
    .await?;
    let document = get_in(&mut tx, &issue.id, key)
        .await?
        .ok_or_else(|| Error::not_found("Document"))?;
    tx.commit().await?;
    Ok(document)
}

fn map_revision(row: &DbRow, document: &Document) -> Result<DocumentRevision> {
    Ok(DocumentRevision {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        document_id: row.text("document_id")?,
        issue_id: document.issue_id.clone(),
        key: document.key.clone(),
        revision_number: row.int("revision_number")?,
        title: row.opt_text("title")?,
        format: row.text("format")?,
        body: row.text("body")?,
        change_summary: row.opt_text("change_summary")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_at: row.text("created_at")?,
    })
}
