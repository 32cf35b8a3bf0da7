//! Approvals: what an agent (or the board) asks the board to decide. A
//! decision is one transaction with its side effects (activating a hire,
//! opening the strategy gate), its activity row and the wakes it causes.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::approval::{ApprovalAction, ApprovalStatus, ApprovalType};
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::input::{ApprovalDecision, NewAgent, NewApproval};
use paperclip_core::model::{Approval, ApprovalComment, Issue};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::row::{one_by_id, RowExt};
use crate::wakes::queue::Wake;
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewApproval,
) -> Result<Approval> {
    let mut payload = Value::Object(input.payload.unwrap_or_default());
    if let Some(config) = payload.get_mut("adapterConfig") {
        crate::org::agents::keep_secrets(config, &Value::Null)?;
    }
    let mut tx = store.begin().await?;
    let approval = create_in(
        &mut tx,
        actor,
        company_id,
        input.kind,
        payload,
        input.issue_ids.unwrap_or_default(),
    )
    .await?;
    tx.commit().await?;
    Ok(approval)
}

pub(crate) async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    kind: ApprovalType,
    payload: Value,
    issue_ids: Vec<String>,
) -> Result<Approval> {
    crate::org::companies::exists_in(tx, company_id).await?;
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO approvals (id, company_id, type, status, payload, requested_by_agent_id, \
         requested_by_user_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(kind.as_str())
    .bind(ApprovalStatus::Pending.as_str())
    .bind(payload.to_string())
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    for issue_id in &issue_ids {
        link_in(tx, company_id, issue_id, &id).await?;
    }
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::ApprovalCreated,
            entity_type: EntityType::Approval,
            entity_id: &id,
            details: json!({ "type": kind.as_str(), "issueIds": issue_ids }),
        },
    )
    .await?;
    get_in(tx, &id).await
}

pub async fn list(store: &Store, company_id: &str, status: Option<&str>) -> Result<Vec<Approval>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM approvals WHERE company_id = $1 AND (status = $2 OR $2 IS NULL) ORDER BY id DESC",
    )
    .bind(company_id)
    .bind(status)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, id: &str) -> Result<Approval> {
    one_by_id(
        store.pool(),
        "SELECT * FROM approvals WHERE id = $1",
        id,
        map,
        "Approval",
    )
    .await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<Approval> {
    one_by_id(
        tx.conn(),
        "SELECT * FROM approvals WHERE id = $1",
        id,
        map,
        "Approval",
    )
    .await
}

/// Applies a board decision (or a requester's resubmit/cancel).
pub async fn decide(
    store: &Store,
    actor: &Actor,
    id: &str,
    action: ApprovalAction,
    input: ApprovalDecision,
) -> Result<Approval> {
    let mut tx = store.begin().await?;
    let approval = get_in(&mut tx, id).await?;
    let Some(next) = action.apply(approval.status) else {
        return Err(Error::conflict(
            format!(
                "Cannot {} an approval that is {}",
                action.as_str().replace('-', " "),
                approval.status
            ),
            Some(json!({ "approvalId": approval.id, "status": approval.status })),
        ));
    };
    let ts = now();
    let mut payload = approval.payload.clone();
    if action == ApprovalAction::Resubmit {
        if let (Some(mut revised), Value::Object(current)) = (input.payload, &mut payload) {
            if let Some(config) = revised.get_mut("adapterConfig") {
                let stored = current.get("adapterConfig").cloned().unwrap_or(Value::Null);
                crate::org::agents::keep_secrets(config, &stored)?;
            }
            current.extend(revised);
        }
    }
    let decided = matches!(
        action,
        ApprovalAction::Approve | ApprovalAction::Reject | ApprovalAction::RequestRevision
    );
    if matches!(next, ApprovalStatus::Approved | ApprovalStatus::Rejected) {
        let approved = next == ApprovalStatus::Approved;
        payload = apply_effects(&mut tx, actor, &approval, approved, payload).await?;
    }
    crate::engine::db::query(
        "UPDATE approvals SET status = $2, payload = $3, decision_note = COALESCE($4, decision_note), \
         decided_by_user_id = CASE WHEN $5 = 1 THEN $6 ELSE decided_by_user_id END, \
         decided_at = CASE WHEN $5 = 1 THEN $7 ELSE decided_at END, updated_at = $7 WHERE id = $1",
    )
    .bind(id)
    .bind(next.as_str())
    .bind(payload.to_string())
    .bind(input.decision_note.as_deref())
    .bind(i64::from(decided))
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let linked = linked_issues_in(&mut tx, id).await?;
    let linked_ids: Vec<String> = linked.iter().map(|i| i.id.clone()).collect();
    let verb = match action {
        ApprovalAction::Approve => Action::ApprovalApproved,
        ApprovalAction::Reject => Action::ApprovalRejected,
        ApprovalAction::RequestRevision => Action::ApprovalRevisionRequested,
        ApprovalAction::Resubmit => Action::ApprovalResubmitted,
        ApprovalAction::Cancel => Action::ApprovalCancelled,
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &approval.company_id,
            action: verb,
            entity_type: EntityType::Approval,
            entity_id: id,
            details: json!({
                "type": approval.kind,
                "status": next,
                "decisionNote": input.decision_note,
                "linkedIssueIds": linked_ids,
                "requestedByAgentId": approval.requested_by_agent_id,
            }),
        },
    )
    .await?;
    if decided {
        wake_concerned(&mut tx, actor, &approval, next, &linked).await?;
    }
    let updated = get_in(&mut tx, id).await?;
    tx.runs_may_start();
    tx.commit().await?;
    Ok(updated)
}

/// What an approved (or rejected) approval changes besides its own row.
async fn apply_effects(
    tx: &mut Tx,
    actor: &Actor,
    approval: &Approval,
    approved: bool,
    mut payload: Value,
) -> Result<Value> {
    match approval.kind {
        ApprovalType::HireAgent => {
            let existing = payload
                .get("agentId")
                .and_then(Value::as_str)
                .map(str::to_string);
            match (existing, approved) {
                (Some(agent_id), true) => {
                    set_agent_status(tx, &agent_id, AgentStatus::Idle).await?
                }
                (Some(agent_id), false) => {
                    set_agent_status(tx, &agent_id, AgentStatus::Terminated).await?
                }
                (None, true) => {
                    let spec: NewAgent = serde_json::from_value(payload.clone()).map_err(|e| {
                        Error::rule(format!(
                            "The hire's payload does not describe an agent: {e}"
                        ))
                    })?;
                    // The payload came in as free JSON, unchecked by the route.
                    paperclip_core::limits::Validate::validate(&spec).map_err(|v| {
                        Error::rule(format!("The hire's payload is invalid: {}", v.message))
                    })?;
                    let agent = crate::org::agents::create_in(
                        tx,
                        actor,
                        &approval.company_id,
                        spec,
                        AgentStatus::Idle,
                    )
                    .await?;
                    payload["agentId"] = Value::String(agent.id);
                }
                (None, false) => {}
            }
        }
        ApprovalType::ApproveCeoStrategy if approved => {
            crate::engine::db::query("UPDATE companies SET strategy_approved_at = COALESCE(strategy_approved_at, $2) WHERE id = $1")
                .bind(&approval.company_id)
                .bind(now())
                .execute(tx.conn())
                .await?;
        }
        ApprovalType::ApproveCeoStrategy
        | ApprovalType::BudgetOverrideRequired
        | ApprovalType::RequestBoardApproval => {}
    }
    Ok(payload)
}

async fn set_agent_status(tx: &mut Tx, agent_id: &str, status: AgentStatus) -> Result<()> {
    crate::engine::db::query("UPDATE agents SET status = $2, updated_at = $3 WHERE id = $1 AND status = 'pending_approval'")
        .bind(agent_id)
        .bind(status.as_str())
        .bind(now())
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// The requesting agent and the assignees of linked issues hear the outcome.
async fn wake_concerned(
    tx: &mut Tx,
    actor: &Actor,
    approval: &Approval,
    status: ApprovalStatus,
    linked: &[Issue],
) -> Result<()> {
    let linked_ids: Vec<&str> = linked.iter().map(|i| i.id.as_str()).collect();
    let payload = json!({ "approvalId": approval.id, "approvalStatus": status, "linkedIssueIds": linked_ids });
    let mut targets: Vec<(String, Option<String>)> = Vec::new();
    if let Some(agent) = &approval.requested_by_agent_id {
        targets.push((agent.clone(), linked.first().map(|i| i.id.clone())));
    }
    for issue in linked {
        if let Some(agent) = &issue.assignee_agent_id {
            if !targets.iter().any(|(a, _)| a == agent) {
                targets.push((agent.clone(), Some(issue.id.clone())));
            }
        }
    }
    // Agent rows are locked in id order, as every multi-agent wake does, so
    // two concurrent ones cannot deadlock.
    targets.sort();
    for (agent_id, issue_id) in targets {
        crate::wakes::enqueue::enqueue_in(
            tx,
            actor,
            Wake {
                agent_id,
                source: WakeSource::Automation,
                trigger_detail: Some("system".into()),
                reason: Some(format!("approval_{}", status.as_str())),
                payload: Some(payload.clone()),
                issue_id,
                idempotency_key: None,
            },
        )
        .await?;
    }
    Ok(())
}

pub async fn add_comment(
    store: &Store,
    actor: &Actor,
    approval_id: &str,
    body: &str,
) -> Result<ApprovalComment> {
    if body.trim().is_empty() {
        return Err(Error::invalid("body", "Comment body must not be empty"));
    }
    let mut tx = store.begin().await?;
    let approval = get_in(&mut tx, approval_id).await?;
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO approval_comments (id, company_id, approval_id, author_agent_id, author_user_id, author_type, body, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(&approval.company_id)
    .bind(approval_id)
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(actor.kind.as_str())
    .bind(body)
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &approval.company_id,
            action: Action::ApprovalCommentAdded,
            entity_type: EntityType::Approval,
            entity_id: approval_id,
            details: json!({ "commentId": id }),
        },
    )
    .await?;
    let row = crate::engine::db::query("SELECT * FROM approval_comments WHERE id = $1")
        .bind(&id)
        .fetch_one(tx.conn())
        .await?;
    tx.commit().await?;
    map_comment(&row)
}

pub async fn comments(store: &Store, approval_id: &str) -> Result<Vec<ApprovalComment>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM approval_comments WHERE approval_id = $1 ORDER BY id",
    )
    .bind(approval_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_comment).collect()
}

pub async fn link(store: &Store, actor: &Actor, issue_id: &str, approval_id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let approval = get_in(&mut tx, approval_id).await?;
    link_in(&mut tx, &approval.company_id, issue_id, approval_id).await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &approval.company_id,
            action: Action::ApprovalIssueLinked,
            entity_type: EntityType::Approval,
            entity_id: approval_id,
            details: json!({ "issueId": issue_id }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn unlink(store: &Store, actor: &Actor, issue_id: &str, approval_id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let approval = get_in(&mut tx, approval_id).await?;
    let n = crate::engine::db::query(
        "DELETE FROM issue_approvals WHERE issue_id = $1 AND approval_id = $2",
    )
    .bind(issue_id)
    .bind(approval_id)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n == 0 {
        return Err(Error::not_found("Approval link"));
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &approval.company_id,
            action: Action::ApprovalIssueUnlinked,
            entity_type: EntityType::Approval,
            entity_id: approval_id,
            details: json!({ "issueId": issue_id }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn link_in(tx: &mut Tx, company_id: &str, issue_id: &str, approval_id: &str) -> Result<()> {
    let issue = crate::issues::table::load_in(tx, issue_id).await?;
    if issue.company_id != company_id {
        return Err(Error::not_found("Issue"));
    }
    crate::engine::db::query("INSERT INTO issue_approvals (issue_id, approval_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        .bind(&issue.id)
        .bind(approval_id)
        .bind(now())
        .execute(tx.conn())
        .await?;
    Ok(())
}

async fn linked_issues_in(tx: &mut Tx, approval_id: &str) -> Result<Vec<Issue>> {
    let ids: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT issue_id FROM issue_approvals WHERE approval_id = $1 ORDER BY issue_id",
    )
    .bind(approval_id)
    .fetch_all(tx.conn())
    .await?;
    let mut out = Vec::with_capacity(ids.len());
    for (id,) in ids {
        out.push(crate::issues::table::load_in(tx, &id).await?);
    }
    Ok(out)
}

pub async fn issues_of(store: &Store, approval_id: &str) -> Result<Vec<Issue>> {
    let mut tx = store.begin().await?;
    let list = linked_issues_in(&mut tx, approval_id).await?;
    tx.commit().await?;
    Ok(list)
}

pub async fn of_issue(store: &Store, issue_id: &str) -> Result<Vec<Approval>> {
    let rows = crate::engine::db::query(
        "SELECT a.* FROM approvals a JOIN issue_approvals l ON l.approval_id = a.id WHERE l.issue_id = $1 ORDER BY a.id DESC",
    )
    .bind(issue_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Whether the company's CEO strategy has been approved (the draft gate is open).
pub(crate) async fn strategy_approved(tx: &mut Tx, company_id: &str) -> Result<bool> {
    let row: Option<(Option<String>,)> =
        crate::engine::db::query_as("SELECT strategy_approved_at FROM companies WHERE id = $1")
            .bind(company_id)
            .fetch_optional(tx.conn())
            .await?;
    Ok(row.and_then(|r| r.0).is_some())
}

fn map(row: &DbRow) -> Result<Approval> {
    Ok(Approval {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        kind: row.stored("type")?,
        requested_by_agent_id: row.opt_text("requested_by_agent_id")?,
        requested_by_user_id: row.opt_text("requested_by_user_id")?,
        status: row.stored("status")?,
        payload: row.json("payload")?,
        decision_note: row.opt_text("decision_note")?,
        decided_by_user_id: row.opt_text("decided_by_user_id")?,
        decided_at: row.opt_text("decided_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

fn map_comment(row: &DbRow) -> Result<ApprovalComment> {
    Ok(ApprovalComment {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        approval_id: row.text("approval_id")?,
        author_agent_id: row.opt_text("author_agent_id")?,
        author_user_id: row.opt_text("author_user_id")?,
        author_type: row.text("author_type")?,
        body: row.text("body")?,
        updated_at: row.text("created_at")?,
        created_at: row.text("created_at")?,
    })
}

/// A hire that waits for the board: the agent exists in `pending_approval`
/// (it cannot run or be assigned work) and a `hire_agent` approval names it.
pub async fn request_hire(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    spec: NewAgent,
) -> Result<(paperclip_core::model::Agent, Approval)> {
    let mut tx = store.begin().await?;
    let mut payload = serde_json::to_value(&spec).unwrap_or(json!({}));
    let agent = crate::org::agents::create_in(
        &mut tx,
        actor,
        company_id,
        spec,
        AgentStatus::PendingApproval,
    )
    .await?;
    payload["agentId"] = Value::String(agent.id.clone());
    // A taken name was numbered: the request names the agent as it is.
    payload["name"] = Value::String(agent.name.clone());
    let approval = create_in(
        &mut tx,
        actor,
        company_id,
        ApprovalType::HireAgent,
        payload,
        Vec::new(),
    )
    .await?;
    tx.commit().await?;
    Ok((agent, approval))
}
