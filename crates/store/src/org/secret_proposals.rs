//! Agents' secret proposals and the bindings an approval grants (upstream's
//! `company_secret_proposals`, `company_secret_bindings`). A proposed value
//! is sealed under the proposal's id (version 0) and scrubbed once the
//! proposal is resolved; an approved secret proposal becomes a company
//! secret in the same transaction, an approved binding a grant.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_secret::{normalize_key, NewSecret, SealedVersion, SecretStatus};
use paperclip_core::secret_box;
use paperclip_core::secret_proposal::{
    ProposalKind, ProposalStatus, SecretProposal, MAX_PENDING_PER_AGENT, PENDING_DAYS,
};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::org::secrets::Seal;
use crate::{new_id, now, Error, Result, Store, Tx};

/// Opens a proposal's sealed value (the runtime's vault).
pub type Open<'a> = &'a (dyn Fn(&SealedVersion) -> std::result::Result<String, String> + Sync);

const COLUMNS: &str = "p.id, p.company_id, p.kind, p.status, p.proposed_name, p.proposed_key, \
    p.proposed_description, p.justification, p.secret_id, p.secret_proposal_id, p.target_id, \
    p.config_path, p.proposed_by_agent_id, p.origin_issue_id, p.origin_run_id, \
    p.resolved_by_user_id, p.resolved_at, p.resolution_reason, p.created_secret_id, \
    p.expires_at, p.created_at, p.updated_at, \
    a.name AS proposer_name, t.name AS target_name, i.identifier AS issue_key, \
    i.title AS issue_title, s.name AS secret_name, sp.proposed_name AS secret_proposal_name";

const FROM: &str = "FROM company_secret_proposals p \
    JOIN agents a ON a.id = p.proposed_by_agent_id \
    LEFT JOIN agents t ON t.id = p.target_id \
    LEFT JOIN issues i ON i.id = p.origin_issue_id \
    LEFT JOIN company_secrets s ON s.id = p.secret_id \
    LEFT JOIN company_secret_proposals sp ON sp.id = p.secret_proposal_id";

/// A checked proposal, ready to insert.
pub struct Draft<'a> {
    pub kind: ProposalKind,
    pub name: Option<&'a str>,
    pub key: Option<String>,
    pub description: Option<&'a str>,
    pub justification: &'a str,
    pub value: Option<&'a str>,
    pub secret_id: Option<&'a str>,
    pub secret_proposal_id: Option<&'a str>,
    pub config_path: Option<&'a str>,
}

/// Inserts an agent's proposal, linked to its run and the run's task.
pub async fn create(
    store: &Store,
    actor: &Actor,
    run_id: &str,
    draft: Draft<'_>,
    seal: Seal<'_>,
) -> Result<SecretProposal> {
    let company_id = actor
        .company_id
        .as_deref()
        .ok_or_else(|| Error::forbidden("Agents only"))?;
    let mut tx = store.begin().await?;
    let pending = crate::engine::db::query(
        "SELECT COUNT(*) AS n FROM company_secret_proposals \
         WHERE proposed_by_agent_id = $1 AND status = 'pending'",
    )
    .bind(&actor.id)
    .fetch_one(tx.conn())
    .await?
    .int("n")?;
    if pending >= MAX_PENDING_PER_AGENT {
        return Err(Error::rule(format!(
            "At most {MAX_PENDING_PER_AGENT} pending proposals per agent: resolve or withdraw some first"
        )));
    }
    if let Some(secret_id) = draft.secret_id {
        secret_in_company(&mut tx, company_id, secret_id).await?;
    }
    if let Some(pid) = draft.secret_proposal_id {
        let row = crate::engine::db::query(
            "SELECT status, kind FROM company_secret_proposals WHERE id = $1 AND company_id = $2",
        )
        .bind(pid)
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("Secret proposal"))?;
        let status: ProposalStatus = row.stored("status")?;
        let kind: ProposalKind = row.stored("kind")?;
        if kind != ProposalKind::Secret || status != ProposalStatus::Pending {
            return Err(Error::rule(
                "Prerequisite secret proposal is no longer pending; use secretId to reference an approved secret",
            ));
        }
    }
    let issue_id = crate::engine::db::query("SELECT issue_id FROM heartbeat_runs WHERE id = $1")
        .bind(run_id)
        .fetch_optional(tx.conn())
        .await?
        .map(|r| r.opt_text("issue_id"))
        .transpose()?
        .flatten();
    let id = new_id();
    let ts = now();
    let expires = (chrono::Utc::now() + chrono::Duration::days(PENDING_DAYS))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let sealed = draft.value.map(|v| seal(&id, 0, v.as_bytes()));
    let target = (draft.kind == ProposalKind::Binding).then_some(actor.id.as_str());
    crate::engine::db::query(
        "INSERT INTO company_secret_proposals (id, company_id, kind, status, proposed_name, \
         proposed_key, proposed_description, justification, value_nonce, value_ciphertext, \
         secret_id, secret_proposal_id, target_id, config_path, proposed_by_agent_id, \
         origin_issue_id, origin_run_id, expires_at, created_at, updated_at) VALUES \
         ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(draft.kind.as_str())
    .bind(draft.name)
    .bind(draft.key.as_deref())
    .bind(draft.description)
    .bind(draft.justification)
    .bind(sealed.as_ref().map(|s| secret_box::encode(&s.nonce)))
    .bind(sealed.as_ref().map(|s| secret_box::encode(&s.ciphertext)))
    .bind(draft.secret_id)
    .bind(draft.secret_proposal_id)
    .bind(target)
    .bind(draft.config_path)
    .bind(&actor.id)
    .bind(issue_id.as_deref())
    .bind(run_id)
    .bind(&expires)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let details =
        json!({ "kind": draft.kind.as_str(), "name": draft.name, "configPath": draft.config_path });
    record(
        &mut tx,
        actor,
        company_id,
        Action::SecretProposalCreated,
        &id,
        details,
    )
    .await?;
    let proposal = get_in(&mut tx, company_id, &id).await?;
    tx.commit().await?;
    Ok(proposal)
}

/// The agent's own proposals and bindings targeting it, newest first.
pub async fn list_for_agent(
    store: &Store,
    company_id: &str,
    agent_id: &str,
) -> Result<Vec<SecretProposal>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} {FROM} WHERE p.company_id = $1 AND (p.proposed_by_agent_id = $2 \
         OR (p.kind = 'binding' AND p.target_id = $2)) ORDER BY p.created_at DESC, p.id DESC LIMIT 100"
    ))
    .bind(company_id)
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// The company's proposals for the board, optionally of one status.
pub async fn list_for_board(
    store: &Store,
    company_id: &str,
    status: Option<ProposalStatus>,
) -> Result<Vec<SecretProposal>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} {FROM} WHERE p.company_id = $1 AND ($2 IS NULL OR p.status = $2) \
         ORDER BY p.created_at DESC, p.id DESC LIMIT 100"
    ))
    .bind(company_id)
    .bind(status.map(|s| s.as_str()))
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, company_id: &str, id: &str) -> Result<SecretProposal> {
    let mut tx = store.begin().await?;
    let p = get_in(&mut tx, company_id, id).await?;
    tx.commit().await?;
    Ok(p)
}

/// The proposer takes back a pending proposal; its value is scrubbed.
pub async fn withdraw(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    id: &str,
) -> Result<SecretProposal> {
    let mut tx = store.begin().await?;
    let p = get_in(&mut tx, company_id, id).await?;
    if p.proposed_by_agent_id != actor.id {
        return Err(Error::forbidden(
            "Only the proposer can withdraw this proposal",
        ));
    }
    settle(&mut tx, &p, ProposalStatus::Withdrawn, None, None, None).await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::SecretProposalWithdrawn,
        id,
        json!({}),
    )
    .await?;
    let p = get_in(&mut tx, company_id, id).await?;
    tx.commit().await?;
    Ok(p)
}

/// The board rejects a pending proposal with a reason; dependent pending
/// bindings are rejected with it.
pub async fn reject(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    id: &str,
    reason: &str,
) -> Result<SecretProposal> {
    let mut tx = store.begin().await?;
    let p = get_in(&mut tx, company_id, id).await?;
    settle(
        &mut tx,
        &p,
        ProposalStatus::Rejected,
        Some(&actor.id),
        Some(reason),
        None,
    )
    .await?;
    crate::engine::db::query(
        "UPDATE company_secret_proposals SET status = 'rejected', resolution_reason = $2, \
         resolved_by_user_id = $3, resolved_at = $4, updated_at = $4 \
         WHERE secret_proposal_id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind("Its secret proposal was rejected")
    .bind(&actor.id)
    .bind(now())
    .execute(tx.conn())
    .await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::SecretProposalRejected,
        id,
        json!({ "reason": reason }),
    )
    .await?;
    let p = get_in(&mut tx, company_id, id).await?;
    tx.commit().await?;
    Ok(p)
}

/// The board approves: a secret proposal becomes a company secret, a
/// binding a grant (approving its pending secret proposal first when
/// `cascade`). All of it in one transaction.
pub async fn approve(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    id: &str,
    cascade: bool,
    open: Open<'_>,
    seal: Seal<'_>,
) -> Result<SecretProposal> {
    let mut tx = store.begin().await?;
    let p = get_in(&mut tx, company_id, id).await?;
    pending(&p)?;
    match p.kind {
        ProposalKind::Secret => {
            approve_secret(&mut tx, actor, &p, open, seal).await?;
        }
        ProposalKind::Binding => {
            let secret_id = match (&p.secret_id, &p.secret_proposal_id) {
                (Some(s), _) => s.clone(),
                (None, Some(pid)) => {
                    let dep = get_in(&mut tx, company_id, pid).await?;
                    match (dep.status, dep.created_secret_id.clone()) {
                        (ProposalStatus::Approved, Some(s)) => s,
                        (ProposalStatus::Pending, _) if cascade => {
                            approve_secret(&mut tx, actor, &dep, open, seal).await?
                        }
                        (ProposalStatus::Pending, _) => {
                            return Err(Error::conflict(
                                format!("Binding proposal requires pending secret proposal {pid}; retry with cascade=true"),
                                None,
                            ))
                        }
                        _ => return Err(Error::conflict(format!("Prerequisite secret proposal {pid} is not approvable"), None)),
                    }
                }
                (None, None) => {
                    return Err(Error::conflict("Binding proposal is incomplete", None))
                }
            };
            let status = secret_in_company(&mut tx, company_id, &secret_id).await?;
            if status != SecretStatus::Active {
                return Err(Error::conflict(
                    "Binding proposal secret is not active",
                    None,
                ));
            }
            let target = p
                .target_id
                .clone()
                .unwrap_or_else(|| p.proposed_by_agent_id.clone());
            let path = p.config_path.clone().unwrap_or_default();
            let ts = now();
            crate::engine::db::query(
                "INSERT INTO company_secret_bindings (id, company_id, secret_id, agent_id, config_path, \
                 created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)",
            )
            .bind(new_id())
            .bind(company_id)
            .bind(&secret_id)
            .bind(&target)
            .bind(&path)
            .bind(&ts)
            .execute(tx.conn())
            .await
            .map_err(|e| match Error::from(e) {
                e if e.is_unique_violation() => Error::conflict(format!("Agent config path already exists: {path}"), None),
                e => e,
            })?;
            settle(
                &mut tx,
                &p,
                ProposalStatus::Approved,
                Some(&actor.id),
                None,
                Some(&secret_id),
            )
            .await?;
            let details = json!({ "agentId": target, "configPath": path, "proposalId": p.id });
            record_as(
                &mut tx,
                actor,
                company_id,
                Action::SecretBindingCreated,
                EntityType::Secret,
                &secret_id,
                details,
            )
            .await?;
        }
    }
    record(
        &mut tx,
        actor,
        company_id,
        Action::SecretProposalApproved,
        id,
        json!({ "kind": p.kind.as_str() }),
    )
    .await?;
    let p = get_in(&mut tx, company_id, id).await?;
    tx.commit().await?;
    Ok(p)
}

async fn approve_secret(
    tx: &mut Tx,
    actor: &Actor,
    p: &SecretProposal,
    open: Open<'_>,
    seal: Seal<'_>,
) -> Result<String> {
    let row = crate::engine::db::query(
        "SELECT value_nonce, value_ciphertext FROM company_secret_proposals WHERE id = $1",
    )
    .bind(&p.id)
    .fetch_one(tx.conn())
    .await?;
    let (Some(nonce), Some(ciphertext)) = (
        row.opt_text("value_nonce")?,
        row.opt_text("value_ciphertext")?,
    ) else {
        return Err(Error::conflict(
            "Proposed secret value is no longer available",
            None,
        ));
    };
    let name = p.proposed_name.clone().unwrap_or_default();
    let sealed = SealedVersion {
        secret_id: p.id.clone(),
        company_id: p.company_id.clone(),
        name: name.clone(),
        status: SecretStatus::Active,
        version: 0,
        nonce,
        ciphertext,
    };
    let value = open(&sealed).map_err(|why| {
        Error::conflict(
            format!("Proposed secret value cannot be opened: {why}"),
            None,
        )
    })?;
    let key = p
        .proposed_key
        .clone()
        .unwrap_or_else(|| normalize_key(&name));
    let input = NewSecret {
        name: name.clone(),
        key: Some(key.clone()),
        provider: None,
        managed_mode: None,
        value: None,
        description: p.proposed_description.clone(),
    };
    let secret =
        crate::org::secrets::create_in(tx, actor, &p.company_id, &name, &key, &input, &value, seal)
            .await?;
    settle(
        tx,
        p,
        ProposalStatus::Approved,
        Some(&actor.id),
        None,
        Some(&secret.id),
    )
    .await?;
    Ok(secret.id)
}

/// Moves a pending proposal to `status` (one conditional UPDATE, so two
/// resolutions never both win) and scrubs its sealed value.
async fn settle(
    tx: &mut Tx,
    p: &SecretProposal,
    status: ProposalStatus,
    by: Option<&str>,
    reason: Option<&str>,
    secret_id: Option<&str>,
) -> Result<()> {
    pending(p)?;
    let ts = now();
    let done = crate::engine::db::query(
        "UPDATE company_secret_proposals SET status = $2, resolved_by_user_id = $3, \
         resolution_reason = $4, created_secret_id = COALESCE($5, created_secret_id), \
         value_nonce = NULL, value_ciphertext = NULL, resolved_at = $6, updated_at = $6 \
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(&p.id)
    .bind(status.as_str())
    .bind(by)
    .bind(reason)
    .bind(secret_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    if done.rows_affected() == 0 {
        return Err(Error::conflict("Proposal is no longer pending", None));
    }
    Ok(())
}

fn pending(p: &SecretProposal) -> Result<()> {
    if p.status != ProposalStatus::Pending {
        return Err(Error::conflict(
            "Only pending proposals can be resolved",
            Some(json!({ "status": p.status.as_str() })),
        ));
    }
    if p.expires_at.as_str() < now().as_str() {
        return Err(Error::conflict(
            "Expired proposals cannot be approved",
            None,
        ));
    }
    Ok(())
}

async fn secret_in_company(tx: &mut Tx, company_id: &str, secret_id: &str) -> Result<SecretStatus> {
    crate::engine::db::query("SELECT status FROM company_secrets WHERE id = $1 AND company_id = $2")
        .bind(secret_id)
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("Secret"))?
        .stored("status")
        .map_err(Into::into)
}

async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    id: &str,
    details: Value,
) -> Result<()> {
    record_as(
        tx,
        actor,
        company_id,
        action,
        EntityType::SecretProposal,
        id,
        details,
    )
    .await
}

pub(crate) async fn record_as(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    entity_type: EntityType,
    entity_id: &str,
    details: Value,
) -> Result<()> {
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action,
            entity_type,
            entity_id,
            details,
        },
    )
    .await
}

async fn get_in(tx: &mut Tx, company_id: &str, id: &str) -> Result<SecretProposal> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} {FROM} WHERE p.id = $1 AND p.company_id = $2"
    ))
    .bind(id)
    .bind(company_id)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Secret proposal"))?;
    map(&row)
}

fn map(row: &DbRow) -> Result<SecretProposal> {
    let target_id = row.opt_text("target_id")?;
    let issue_id = row.opt_text("origin_issue_id")?;
    let proposer = row.text("proposed_by_agent_id")?;
    Ok(SecretProposal {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        kind: row.stored("kind")?,
        status: row.stored("status")?,
        proposed_name: row.opt_text("proposed_name")?,
        proposed_key: row.opt_text("proposed_key")?,
        proposed_description: row.opt_text("proposed_description")?,
        justification: row.text("justification")?,
        secret_id: row.opt_text("secret_id")?,
        secret_proposal_id: row.opt_text("secret_proposal_id")?,
        target_type: target_id.as_ref().map(|_| "agent".to_string()),
        target: match &target_id {
            Some(id) => json!({ "id": id, "name": row.opt_text("target_name")?, "icon": null }),
            None => Value::Null,
        },
        target_id,
        config_path: row.opt_text("config_path")?,
        proposed_by: json!({ "id": proposer, "name": row.text("proposer_name")?, "icon": null }),
        proposed_by_agent_id: proposer,
        origin_issue: match &issue_id {
            Some(id) => {
                json!({ "id": id, "key": row.opt_text("issue_key")?, "title": row.opt_text("issue_title")? })
            }
            None => Value::Null,
        },
        origin_issue_id: issue_id,
        origin_run_id: row.opt_text("origin_run_id")?,
        resolved_by_user_id: row.opt_text("resolved_by_user_id")?,
        resolved_at: row.opt_text("resolved_at")?,
        resolution_reason: row.opt_text("resolution_reason")?,
        created_secret_id: row.opt_text("created_secret_id")?,
        expires_at: row.text("expires_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
        secret_name: row.opt_text("secret_name")?,
        secret_proposal_name: row.opt_text("secret_proposal_name")?,
    })
}
