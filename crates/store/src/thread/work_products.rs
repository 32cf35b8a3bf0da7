//! Work products of issues (upstream's `issue_work_products`). An artifact
//! from provider `paperclip` stands for one of the issue's attachments, whose
//! type, size, name and links the store copies into its metadata; a primary
//! product is the only primary one of its type on its issue. Each change is
//! written with its activity entry, which is also what makes the task page
//! update live.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::model::Issue;
use paperclip_core::work_product::{
    attachment_id_of, HealthStatus, NewWorkProduct, ReviewState, WorkProduct, WorkProductPatch,
    WorkProductStatus, WorkProductType, PAPERCLIP_PROVIDER,
};
use serde_json::{json, Value};

use crate::audit::activity;
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Error, Result, Store, Tx};

pub(crate) const COLUMNS: &str = "id, company_id, project_id, issue_id, execution_workspace_id, \
     runtime_service_id, type, provider, external_id, title, url, status, review_state, \
     is_primary, health_status, summary, metadata, created_by_run_id, created_at, updated_at";

/// Why a product was created, for its activity entry (`source`).
#[derive(Clone, Copy)]
pub enum Source {
    Api,
    RunAttachmentUpload,
    RunResult,
}

impl Source {
    fn as_str(self) -> Option<&'static str> {
        match self {
            Source::Api => None,
            Source::RunAttachmentUpload => Some("run_attachment_upload"),
            Source::RunResult => Some("run_result"),
        }
    }
}

/// The issue's products: primary first, then most recently updated.
pub async fn list(store: &Store, issue_id: &str) -> Result<Vec<WorkProduct>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM issue_work_products WHERE issue_id = $1 \
         ORDER BY is_primary DESC, updated_at DESC, id DESC"
    ))
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// A product with what the Artifacts page names it by: its task's
/// identifier and title, and its run's agent.
pub struct Listed {
    pub product: WorkProduct,
    pub identifier: String,
    pub issue_title: String,
    pub run_agent_id: Option<String>,
}

/// A company's products, newest first, at most `limit`, with their tasks'
/// identifiers and their runs' agents (the Artifacts page), in one query.
pub async fn list_company(store: &Store, company_id: &str, limit: i64) -> Result<Vec<Listed>> {
    let columns: String = COLUMNS
        .split(", ")
        .map(|c| format!("w.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = crate::engine::db::query(&format!(
        "SELECT {columns}, i.identifier AS issue_identifier, i.title AS issue_title, \
         r.agent_id AS run_agent_id FROM issue_work_products w \
         JOIN issues i ON i.id = w.issue_id \
         LEFT JOIN heartbeat_runs r ON r.id = w.created_by_run_id \
         WHERE w.company_id = $1 ORDER BY w.created_at DESC, w.id DESC LIMIT $2"
    ))
    .bind(company_id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Listed {
                product: map(row)?,
                identifier: row.text("issue_identifier")?,
                issue_title: row.text("issue_title")?,
                run_agent_id: row.opt_text("run_agent_id")?,
            })
        })
        .collect()
}

pub async fn get(store: &Store, id: &str) -> Result<WorkProduct> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM issue_work_products WHERE id = $1"),
        id,
        map,
        "Work product",
    )
    .await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<WorkProduct> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {COLUMNS} FROM issue_work_products WHERE id = $1"),
        id,
        map,
        "Work product",
    )
    .await
}

pub async fn create(
    store: &Store,
    actor: &Actor,
    issue: &Issue,
    input: &NewWorkProduct,
) -> Result<WorkProduct> {
    let mut tx = store.begin().await?;
    let product = create_in(&mut tx, actor, issue, input, Source::Api).await?;
    tx.commit().await?;
    Ok(product)
}

/// [`create`] inside the caller's transaction. The caller has settled
/// `createdByRunId` (an agent's own run); here it must be a run of the
/// issue's company. A repeat from the same run for the same attachment
/// updates the product it made before (upstream's rule).
pub(crate) async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    input: &NewWorkProduct,
    source: Source,
) -> Result<WorkProduct> {
    let mut metadata = input.metadata.clone();
    if let Some(run_id) = &input.created_by_run_id {
        run_in_company(tx, &issue.company_id, run_id).await?;
    }
    if let Some(project_id) = &input.project_id {
        project_in_company(tx, &issue.company_id, project_id).await?;
    }
    let mut external_id = input.external_id.clone();
    if input.kind == WorkProductType::Artifact && input.provider == PAPERCLIP_PROVIDER {
        let attachment_id = attachment_id_of(metadata.as_ref())
            .ok_or_else(|| {
                Error::rule(
                    "A paperclip artifact needs metadata.attachmentId: upload the file first",
                )
            })?
            .to_string();
        metadata = Some(artifact_metadata(tx, issue, &attachment_id, metadata).await?);
        external_id.get_or_insert(attachment_id.clone());
        if let Some(run_id) = &input.created_by_run_id {
            let existing = crate::engine::db::query(
                "SELECT id FROM issue_work_products WHERE issue_id = $1 AND type = 'artifact' \
                 AND provider = 'paperclip' AND created_by_run_id = $2 AND external_id = $3 LIMIT 1",
            )
            .bind(&issue.id)
            .bind(run_id)
            .bind(&attachment_id)
            .fetch_optional(tx.conn())
            .await?;
            if let Some(row) = existing {
                let id = row.text("id")?;
                let patch = WorkProductPatch {
                    title: Some(input.title.clone()),
                    summary: input.summary.clone().map(Some),
                    metadata: Some(metadata),
                    status: input.status,
                    review_state: input.review_state,
                    is_primary: input.is_primary,
                    health_status: input.health_status,
                    url: input.url.clone().map(Some),
                    ..WorkProductPatch::default()
                };
                return update_in(tx, actor, &id, &patch).await;
            }
        }
    }
    let id = new_id();
    let ts = now();
    let is_primary = input.is_primary.unwrap_or(false);
    if is_primary {
        clear_primary(tx, &issue.id, input.kind, &id).await?;
    }
    crate::engine::db::query(&format!(
        "INSERT INTO issue_work_products ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19)"
    ))
    .bind(&id)
    .bind(&issue.company_id)
    .bind(input.project_id.as_deref().or(issue.project_id.as_deref()))
    .bind(&issue.id)
    .bind(input.execution_workspace_id.as_deref())
    .bind(input.runtime_service_id.as_deref())
    .bind(input.kind.as_str())
    .bind(input.provider.trim())
    .bind(external_id.as_deref())
    .bind(input.title.trim())
    .bind(input.url.as_deref())
    .bind(input.status.unwrap_or(WorkProductStatus::Active).as_str())
    .bind(input.review_state.unwrap_or(ReviewState::None).as_str())
    .bind(is_primary)
    .bind(input.health_status.unwrap_or(HealthStatus::Unknown).as_str())
    .bind(input.summary.as_deref())
    .bind(metadata.as_ref().map(Value::to_string))
    .bind(input.created_by_run_id.as_deref())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let mut details = json!({
        "workProductId": id, "type": input.kind.as_str(), "provider": input.provider.trim(),
    });
    if let Some(source) = source.as_str() {
        details["source"] = json!(source);
    }
    activity::on_issue(tx, actor, issue, Action::IssueWorkProductCreated, details).await?;
    get_in(tx, &id).await
}

/// Entries of one run result at most: a result lists what a run produced,
/// not a catalogue.
pub const RUN_RESULT_MAX: usize = 50;

/// Work products a succeeded run's result lists (`result.workProducts`,
/// each a create body), written in the transaction that records the run's
/// end, so the run and what it produced commit together. Each is the run's
/// own (`createdByRunId`), on the run's task. An entry that is not a valid
/// product is skipped, not the run: the reasons are returned for its log.
pub(crate) async fn record_run_result(
    tx: &mut Tx,
    run: &paperclip_core::model::HeartbeatRun,
    result: Option<&Value>,
) -> Result<Vec<String>> {
    use paperclip_core::limits::Validate;
    let Some(entries) = result
        .and_then(|r| r.get("workProducts"))
        .and_then(Value::as_array)
    else {
        return Ok(Vec::new());
    };
    let Some(issue_id) = &run.issue_id else {
        return Ok(vec![
            "workProducts: the run has no task to record them on".into()
        ]);
    };
    let issue = match crate::issues::table::load_in(tx, issue_id).await {
        Ok(issue) => issue,
        Err(Error::NotFound(_)) => return Ok(vec!["workProducts: the run's task is gone".into()]),
        Err(e) => return Err(e),
    };
    let actor = Actor::agent(&run.agent_id, &run.company_id, Some(run.id.clone()));
    let mut skipped = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if i >= RUN_RESULT_MAX {
            skipped.push(format!(
                "workProducts[{i}..]: at most {RUN_RESULT_MAX} per run"
            ));
            break;
        }
        let mut input = match serde_json::from_value::<NewWorkProduct>(entry.clone()) {
            Ok(input) => input,
            Err(e) => {
                skipped.push(format!("workProducts[{i}]: {e}"));
                continue;
            }
        };
        if let Err(v) = input.validate() {
            skipped.push(format!("workProducts[{i}]: {}", v.message));
            continue;
        }
        input.created_by_run_id = Some(run.id.clone());
        match create_in(tx, &actor, &issue, &input, Source::RunResult).await {
            Ok(_) => {}
            Err(Error::Rule(m) | Error::NotFound(m)) => {
                skipped.push(format!("workProducts[{i}]: {m}"))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(skipped)
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &WorkProductPatch,
) -> Result<WorkProduct> {
    let mut tx = store.begin().await?;
    let product = update_in(&mut tx, actor, id, patch).await?;
    tx.commit().await?;
    Ok(product)
}

async fn update_in(
    tx: &mut Tx,
    actor: &Actor,
    id: &str,
    patch: &WorkProductPatch,
) -> Result<WorkProduct> {
    let current = get_in(tx, id).await?;
    let issue = crate::issues::table::load_in(tx, &current.issue_id).await?;
    if let Some(Some(run_id)) = &patch.created_by_run_id {
        run_in_company(tx, &current.company_id, run_id).await?;
    }
    if let Some(Some(project_id)) = &patch.project_id {
        project_in_company(tx, &current.company_id, project_id).await?;
    }
    let kind = patch.kind.unwrap_or(current.kind);
    let provider = patch
        .provider
        .as_deref()
        .map(str::trim)
        .unwrap_or(&current.provider)
        .to_string();
    let pick = |p: &Option<Option<String>>, c: &Option<String>| match p {
        Some(v) => v.clone(),
        None => c.clone(),
    };
    let mut metadata = match &patch.metadata {
        Some(v) => v.clone(),
        None => current.metadata.clone(),
    };
    if kind == WorkProductType::Artifact
        && provider == PAPERCLIP_PROVIDER
        && (patch.metadata.is_some() || patch.kind.is_some() || patch.provider.is_some())
    {
        let attachment_id = attachment_id_of(metadata.as_ref())
            .ok_or_else(|| Error::rule("A paperclip artifact needs metadata.attachmentId"))?
            .to_string();
        metadata = Some(artifact_metadata(tx, &issue, &attachment_id, metadata).await?);
    }
    let is_primary = patch.is_primary.unwrap_or(current.is_primary);
    if is_primary {
        clear_primary(tx, &current.issue_id, kind, id).await?;
    }
    crate::engine::db::query(
        "UPDATE issue_work_products SET project_id = $2, execution_workspace_id = $3, \
         runtime_service_id = $4, type = $5, provider = $6, external_id = $7, title = $8, \
         url = $9, status = $10, review_state = $11, is_primary = $12, health_status = $13, \
         summary = $14, metadata = $15, created_by_run_id = $16, updated_at = $17 WHERE id = $1",
    )
    .bind(id)
    .bind(pick(&patch.project_id, &current.project_id))
    .bind(pick(
        &patch.execution_workspace_id,
        &current.execution_workspace_id,
    ))
    .bind(pick(&patch.runtime_service_id, &current.runtime_service_id))
    .bind(kind.as_str())
    .bind(&provider)
    .bind(pick(&patch.external_id, &current.external_id))
    .bind(
        patch
            .title
            .as_deref()
            .map(str::trim)
            .unwrap_or(&current.title),
    )
    .bind(pick(&patch.url, &current.url))
    .bind(patch.status.unwrap_or(current.status).as_str())
    .bind(patch.review_state.unwrap_or(current.review_state).as_str())
    .bind(is_primary)
    .bind(
        patch
            .health_status
            .unwrap_or(current.health_status)
            .as_str(),
    )
    .bind(pick(&patch.summary, &current.summary))
    .bind(metadata.as_ref().map(Value::to_string))
    .bind(pick(&patch.created_by_run_id, &current.created_by_run_id))
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::on_issue(
        tx,
        actor,
        &issue,
        Action::IssueWorkProductUpdated,
        json!({ "workProductId": id, "changedKeys": patch.changed_keys() }),
    )
    .await?;
    get_in(tx, id).await
}

pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<WorkProduct> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    let issue = crate::issues::table::load_in(&mut tx, &current.issue_id).await?;
    crate::engine::db::query("DELETE FROM issue_work_products WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    activity::on_issue(
        &mut tx,
        actor,
        &issue,
        Action::IssueWorkProductDeleted,
        json!({ "workProductId": id, "type": current.kind.as_str() }),
    )
    .await?;
    tx.commit().await?;
    Ok(current)
}

/// The attachment's facts, merged over what the caller sent.
async fn artifact_metadata(
    tx: &mut Tx,
    issue: &Issue,
    attachment_id: &str,
    given: Option<Value>,
) -> Result<Value> {
    let a = crate::thread::attachments::get_in(tx, attachment_id)
        .await
        .map_err(|_| Error::rule("metadata.attachmentId names no attachment of this issue"))?;
    if a.issue_id != issue.id {
        return Err(Error::rule(
            "metadata.attachmentId names no attachment of this issue",
        ));
    }
    let mut meta = match given {
        Some(Value::Object(m)) => Value::Object(m),
        _ => json!({}),
    };
    meta["attachmentId"] = json!(a.id);
    meta["contentType"] = json!(a.content_type);
    meta["byteSize"] = json!(a.byte_size);
    meta["contentPath"] = json!(a.content_path);
    meta["openPath"] = json!(a.open_path);
    meta["downloadPath"] = json!(a.download_path);
    meta["originalFilename"] = json!(a.original_filename);
    Ok(meta)
}

async fn clear_primary(
    tx: &mut Tx,
    issue_id: &str,
    kind: WorkProductType,
    keep: &str,
) -> Result<()> {
    crate::engine::db::query(
        "UPDATE issue_work_products SET is_primary = $4 \
         WHERE issue_id = $1 AND type = $2 AND id <> $3 AND is_primary = $5",
    )
    .bind(issue_id)
    .bind(kind.as_str())
    .bind(keep)
    .bind(false)
    .bind(true)
    .execute(tx.conn())
    .await?;
    Ok(())
}

async fn run_in_company(tx: &mut Tx, company_id: &str, run_id: &str) -> Result<()> {
    let row = crate::engine::db::query("SELECT company_id FROM heartbeat_runs WHERE id = $1")
        .bind(run_id)
        .fetch_optional(tx.conn())
        .await?;
    match row {
        Some(r) if r.text("company_id")? == company_id => Ok(()),
        _ => Err(Error::rule("createdByRunId names no run of this company")),
    }
}

async fn project_in_company(tx: &mut Tx, company_id: &str, project_id: &str) -> Result<()> {
    let row = crate::engine::db::query("SELECT company_id FROM projects WHERE id = $1")
        .bind(project_id)
        .fetch_optional(tx.conn())
        .await?;
    match row {
        Some(r) if r.text("company_id")? == company_id => Ok(()),
        _ => Err(Error::rule("projectId names no project of this company")),
    }
}

fn map(row: &DbRow) -> Result<WorkProduct> {
    Ok(WorkProduct {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        project_id: row.opt_text("project_id")?,
        issue_id: row.text("issue_id")?,
        execution_workspace_id: row.opt_text("execution_workspace_id")?,
        runtime_service_id: row.opt_text("runtime_service_id")?,
        kind: row.stored("type")?,
        provider: row.text("provider")?,
        external_id: row.opt_text("external_id")?,
        title: row.text("title")?,
        url: row.opt_text("url")?,
        status: row.stored("status")?,
        review_state: row.stored("review_state")?,
        is_primary: row.flag("is_primary")?,
        health_status: row.stored("health_status")?,
        summary: row.opt_text("summary")?,
        metadata: row.opt_json("metadata")?,
        created_by_run_id: row.opt_text("created_by_run_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
