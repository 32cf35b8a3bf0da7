//! Issue-thread interactions: the cards an agent puts in a task's thread
//! when it needs a person. Creating one, listing them, and what a person's
//! comment or a closed task does to the pending ones; resolving one is in
//! [`crate::thread::interactions::resolve`]. Each change is one transaction with its
//! activity row and the wake it causes.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_governance::{choose_policy, ResolverGovernance};
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::interaction::{
    ContinuationPolicy, Interaction, InteractionKind, InteractionStatus, NewInteraction,
    ResolverPolicy,
};
use paperclip_core::model::Issue;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::wakes::queue::Wake;
use crate::{new_id, now, Error, Result, Store, Tx};

/// A new card, or with an `idempotencyKey` already used on the task, the
/// card that key made (`false`): the same body gets it back, another is 409.
pub async fn create(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    input: NewInteraction,
    payload: Value,
) -> Result<(Interaction, bool)> {
    let mut tx = store.begin().await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    if let Some(key) = &input.idempotency_key {
        if let Some(existing) = by_key(&mut tx, &issue.id, key).await? {
            tx.rollback().await?;
            let same = existing.kind == input.kind
                && existing.payload == payload
                && existing.title == input.title
                && existing.summary == input.summary;
            if !same {
                return Err(Error::conflict(
                    "This idempotencyKey was used on the task for a different interaction",
                    Some(json!({ "idempotencyKey": key, "interactionId": existing.id })),
                ));
            }
            return Ok((existing, false));
        }
    }
    if issue.status.is_terminal() {
        return Err(Error::conflict(
            format!(
                "{} is {}: it takes no new interactions",
                issue.identifier,
                issue.status.as_str()
            ),
            Some(json!({ "status": issue.status.as_str() })),
        ));
    }
    check_refs(&mut tx, actor, &issue, &input, &payload).await?;
    let id = new_id();
    let ts = now();
    let continuation = input.continuation_policy.unwrap_or(match input.kind {
        InteractionKind::RequestConfirmation => ContinuationPolicy::None,
        _ => ContinuationPolicy::WakeAssignee,
    });
    let policy = choose_policy(
        input.kind,
        input.resolver_policy,
        &governance_in(&mut tx, &issue.company_id).await?,
    );
    // A board caller may attribute the card to a run; an agent's is its own.
    let source_run = match actor.agent_id() {
        Some(_) => actor.run_id.clone(),
        None => input.source_run_id.clone(),
    };
    supersede_older(&mut tx, actor, &issue, input.kind, &payload, &id, &ts).await?;
    crate::engine::db::query(
        "INSERT INTO issue_thread_interactions (id, company_id, issue_id, kind, status, \
         continuation_policy, requested_resolver_policy, effective_resolver_policy, idempotency_key, \
         source_comment_id, source_run_id, addressee_agent_id, addressee_user_id, title, summary, \
         payload, created_by_agent_id, created_by_user_id, created_at, updated_at, \
         resolver_policy_provenance, effective_resolver_policy_source) \
         VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19, $20)",
    )
    .bind(&id)
    .bind(&issue.company_id)
    .bind(&issue.id)
    .bind(input.kind.as_str())
    .bind(continuation.as_str())
    .bind(policy.requested.as_str())
    .bind(policy.effective.as_str())
    .bind(input.idempotency_key.as_deref())
    .bind(input.source_comment_id.as_deref())
    .bind(source_run.as_deref())
    .bind(input.addressee_agent_id.as_deref())
    .bind(input.addressee_user_id.as_deref())
    .bind(input.title.as_deref())
    .bind(input.summary.as_deref())
    .bind(payload.to_string())
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(&ts)
    .bind(policy.provenance)
    .bind(policy.source)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueThreadInteractionCreated,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "interactionId": id,
                "interactionKind": input.kind.as_str(),
                "interactionStatus": "pending",
                "continuationPolicy": continuation.as_str(),
                "addresseeAgentId": input.addressee_agent_id,
                "addresseeUserId": input.addressee_user_id,
                "resolverPolicy": policy.effective.as_str(),
            }),
        },
    )
    .await?;
    if let Some(agent) = &input.addressee_agent_id {
        crate::wakes::enqueue::enqueue_in(
            &mut tx,
            actor,
            Wake {
                agent_id: agent.clone(),
                source: WakeSource::Automation,
                trigger_detail: Some("system".into()),
                reason: Some("interaction_pending".into()),
                payload: Some(json!({
                    "issueId": issue.id, "taskId": issue.id, "interactionId": id,
                    "interactionKind": input.kind.as_str(), "interactionStatus": "pending",
                    "source": "issue.interaction.created",
                })),
                issue_id: Some(issue.id.clone()),
                idempotency_key: Some(format!("interaction-pending:{id}")),
            },
        )
        .await?;
    }
    let card = get_in(&mut tx, &id).await?;
    tx.runs_may_start();
    tx.commit().await?;
    Ok((card, true))
}

/// The references a card makes must be to this task's company and thread.
async fn check_refs(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    input: &NewInteraction,
    payload: &Value,
) -> Result<()> {
    if input.addressee_agent_id.is_some() && input.addressee_user_id.is_some() {
        return Err(Error::rule(
            "Address the interaction to an agent or a person, not both",
        ));
    }
    if let Some(agent) = &input.addressee_agent_id {
        let found: Option<(String,)> = crate::engine::db::query_as(
            "SELECT status FROM agents WHERE id = $1 AND company_id = $2",
        )
        .bind(agent)
        .bind(&issue.company_id)
        .fetch_optional(tx.conn())
        .await?;
        match found {
            None => {
                return Err(Error::rule(
                    "addresseeAgentId is not an agent of this company",
                ))
            }
            Some((status,)) if status == "terminated" || status == "pending_approval" => {
                return Err(Error::rule(
                    "addresseeAgentId names an agent that cannot be woken",
                ))
            }
            _ if actor.agent_id() == Some(agent.as_str()) => {
                return Err(Error::rule(
                    "An agent cannot address an interaction to itself",
                ))
            }
            _ => {}
        }
    }
    if let Some(comment) = &input.source_comment_id {
        let found: Option<(i64,)> = crate::engine::db::query_as(
            "SELECT 1 FROM issue_comments WHERE id = $1 AND issue_id = $2 AND deleted_at IS NULL",
        )
        .bind(comment)
        .bind(&issue.id)
        .fetch_optional(tx.conn())
        .await?;
        if found.is_none() {
            return Err(Error::rule("sourceCommentId is not a comment on this task"));
        }
    }
    if let Some((key, revision)) = paperclip_core::interaction_payload::document_target(payload) {
        let latest: Option<(String,)> = crate::engine::db::query_as(
            "SELECT CAST(latest_revision_id AS TEXT) FROM issue_documents WHERE issue_id = $1 AND doc_key = $2",
        )
        .bind(&issue.id)
        .bind(&key)
        .fetch_optional(tx.conn())
        .await?;
        match latest {
            None => return Err(Error::rule(format!("The task has no {key:?} document"))),
            Some((latest,)) if latest != revision => {
                return Err(Error::conflict(
                    format!("The {key:?} document has a newer revision; ask about that one"),
                    Some(json!({ "latestRevisionId": latest, "revisionId": revision })),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// An agent's new question (or plain confirmation) replaces its older
/// pending ones of the same kind on the task: the board answers the latest.
async fn supersede_older(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    kind: InteractionKind,
    payload: &Value,
    new_id: &str,
    ts: &str,
) -> Result<()> {
    let Some(agent) = actor.agent_id() else {
        return Ok(());
    };
    let plain = match kind {
        InteractionKind::AskUserQuestions => true,
        InteractionKind::RequestConfirmation => payload.get("target").is_none(),
        _ => false,
    };
    if !plain {
        return Ok(());
    }
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE issue_id = $1 AND kind = $2 \
         AND status = 'pending' AND created_by_agent_id = $3",
    )
    .bind(&issue.id)
    .bind(kind.as_str())
    .bind(agent)
    .fetch_all(tx.conn())
    .await?;
    for row in &rows {
        let old = map(row)?;
        if kind == InteractionKind::RequestConfirmation && old.payload.get("target").is_some() {
            continue;
        }
        let result = match kind {
            InteractionKind::AskUserQuestions => json!({
                "version": 1, "answers": [], "expirationReason": "superseded_by_newer_interaction",
                "supersededByInteractionId": new_id }),
            _ => json!({ "version": 1, "outcome": "superseded_by_newer_request",
                "supersededByInteractionId": new_id }),
        };
        expire(
            tx,
            actor,
            issue,
            &old,
            result,
            "issue.interaction.created",
            ts,
        )
        .await?;
    }
    Ok(())
}

/// Marks a pending card expired, with its activity row. No wake: whatever
/// expired it (a newer card, a comment) wakes on its own account.
pub(crate) async fn expire(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    result: Value,
    source: &str,
    ts: &str,
) -> Result<()> {
    crate::engine::db::query(
        "UPDATE issue_thread_interactions SET status = 'expired', result = $2, resolved_at = $3, \
         updated_at = $3 WHERE id = $1 AND status = 'pending'",
    )
    .bind(&card.id)
    .bind(result.to_string())
    .bind(ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueThreadInteractionExpired,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier, "interactionId": card.id,
                "interactionKind": card.kind.as_str(), "interactionStatus": "expired",
                "source": source, "result": result,
            }),
        },
    )
    .await?;
    Ok(())
}

/// Pending cards about an older revision of the task's `key` document
/// expire when a new revision is written.
pub(crate) async fn expire_stale_targets(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    key: &str,
    revision_id: &str,
    ts: &str,
) -> Result<()> {
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE issue_id = $1 AND status = 'pending'",
    )
    .bind(&issue.id)
    .fetch_all(tx.conn())
    .await?;
    for row in &rows {
        let card = map(row)?;
        let stale = paperclip_core::interaction_payload::document_target(&card.payload)
            .is_some_and(|(k, r)| k == key && r != revision_id);
        if stale {
            let result =
                json!({ "version": 1, "outcome": "stale_target", "latestRevisionId": revision_id });
            expire(tx, actor, issue, &card, result, "issue.document", ts).await?;
        }
    }
    Ok(())
}

/// A person's comment answers the thread: pending cards that allow it are
/// superseded by it (the comment's own wake carries it to the agent).
pub(crate) async fn supersede_by_comment(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    comment_id: &str,
    ts: &str,
) -> Result<()> {
    if actor.user_id().is_none() || actor.run_id.is_some() {
        return Ok(());
    }
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE issue_id = $1 AND status = 'pending' \
         AND kind <> 'suggest_tasks' AND created_at <= $2",
    )
    .bind(&issue.id)
    .bind(ts)
    .fetch_all(tx.conn())
    .await?;
    for row in &rows {
        let card = map(row)?;
        if card.payload.get("supersedeOnUserComment") != Some(&Value::Bool(true)) {
            continue;
        }
        let result = match card.kind {
            InteractionKind::AskUserQuestions => json!({ "version": 1, "answers": [],
                "expirationReason": "superseded_by_comment", "commentId": comment_id }),
            _ => {
                json!({ "version": 1, "outcome": "superseded_by_comment", "commentId": comment_id })
            }
        };
        expire(tx, actor, issue, &card, result, "issue.comment", ts).await?;
    }
    Ok(())
}

/// The task's cards, oldest first. On a closed task, a card still pending
/// reads as expired: nobody can answer it any more.
pub async fn list(store: &Store, issue: &Issue) -> Result<Vec<Interaction>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE issue_id = $1 ORDER BY created_at, id",
    )
    .bind(&issue.id)
    .fetch_all(store.pool())
    .await?;
    let mut cards: Vec<Interaction> = rows.iter().map(map).collect::<Result<_>>()?;
    if issue.status.is_terminal() {
        for card in cards
            .iter_mut()
            .filter(|c| c.status == InteractionStatus::Pending)
        {
            card.status = InteractionStatus::Expired;
            card.result = Some(json!({ "version": 1, "outcome": "issue_closed" }));
        }
    }
    Ok(cards)
}

/// The pending cards of a company, newest first, with their task's
/// identifier and title: the board's inbox of questions.
pub async fn pending_in_company(
    store: &Store,
    company_id: &str,
    limit: i64,
) -> Result<Vec<(Interaction, String, String)>> {
    let rows = crate::engine::db::query(
        "SELECT t.*, i.identifier AS issue_identifier, i.title AS issue_title \
         FROM issue_thread_interactions t JOIN issues i ON i.id = t.issue_id \
         WHERE t.company_id = $1 AND t.status = 'pending' \
         AND i.status NOT IN ('done', 'cancelled') ORDER BY t.created_at DESC, t.id DESC LIMIT $2",
    )
    .bind(company_id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| Ok((map(r)?, r.text("issue_identifier")?, r.text("issue_title")?)))
        .collect()
}

/// How many cards wait on the board in the company (open tasks only): the
/// sidebar's count, one probe of the pending-cards index.
pub async fn pending_count(store: &Store, company_id: &str) -> Result<i64> {
    let (n,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM issue_thread_interactions t JOIN issues i ON i.id = t.issue_id \
         WHERE t.company_id = $1 AND t.status = 'pending' AND i.status NOT IN ('done', 'cancelled')",
    )
    .bind(company_id)
    .fetch_one(store.pool())
    .await?;
    Ok(n)
}

/// Resolved cards on the run's task whose resolution no run has carried to
/// the agent yet, claimed for this run: an answer reaches the agent once,
/// however its wakes were coalesced or a restart came between.
pub async fn deliver(
    store: &Store,
    run_id: &str,
    agent_id: &str,
    issue_id: &str,
) -> Result<Vec<Interaction>> {
    let mut tx = store.begin().await?;
    let rows = crate::engine::db::query(
        "SELECT t.* FROM issue_thread_interactions t JOIN issues i ON i.id = t.issue_id \
         WHERE t.issue_id = $1 AND t.delivered_run_id IS NULL \
         AND t.status IN ('accepted', 'rejected', 'answered', 'cancelled') \
         AND (t.created_by_agent_id = $2 OR i.assignee_agent_id = $2) ORDER BY t.resolved_at, t.id",
    )
    .bind(issue_id)
    .bind(agent_id)
    .fetch_all(tx.conn())
    .await?;
    let cards: Vec<Interaction> = rows.iter().map(map).collect::<Result<_>>()?;
    for card in &cards {
        crate::engine::db::query(
            "UPDATE issue_thread_interactions SET delivered_run_id = $2 WHERE id = $1 AND delivered_run_id IS NULL",
        )
        .bind(&card.id)
        .bind(run_id)
        .execute(tx.conn())
        .await?;
    }
    tx.commit().await?;
    Ok(cards)
}

pub async fn get(store: &Store, issue_id: &str, id: &str) -> Result<Interaction> {
    let row = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE id = $1 AND issue_id = $2",
    )
    .bind(id)
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Interaction"))
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Interaction> {
    crate::engine::row::one_by_id(
        tx.conn(),
        "SELECT * FROM issue_thread_interactions WHERE id = $1",
        id,
        map,
        "Interaction",
    )
    .await
}

async fn by_key(tx: &mut Tx, issue_id: &str, key: &str) -> Result<Option<Interaction>> {
    let row = crate::engine::db::query(
        "SELECT * FROM issue_thread_interactions WHERE issue_id = $1 AND idempotency_key = $2",
    )
    .bind(issue_id)
    .bind(key)
    .fetch_optional(tx.conn())
    .await?;
    row.as_ref().map(map).transpose()
}

/// The company's rule over its cards, read in the card's transaction.
async fn governance_in(tx: &mut Tx, company_id: &str) -> Result<ResolverGovernance> {
    let row = crate::engine::db::query(
        "SELECT interaction_resolver_governance FROM companies WHERE id = $1",
    )
    .bind(company_id)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Company"))?;
    serde_json::from_value(row.json("interaction_resolver_governance")?)
        .map_err(|e| Error::Database(sqlx::Error::Decode(Box::new(e))))
}

pub(crate) fn map(row: &DbRow) -> Result<Interaction> {
    let requested: Option<ResolverPolicy> = row.opt_stored("requested_resolver_policy")?;
    let effective: ResolverPolicy = row.stored("effective_resolver_policy")?;
    // Cards made before migration 56 carry neither: a card that named no
    // policy stored none, and no company cap existed.
    let provenance = match row.opt_text("resolver_policy_provenance")?.as_deref() {
        Some("explicit") => "explicit",
        Some(_) => "inherited",
        None if requested.is_some() => "explicit",
        None => "inherited",
    };
    let source = match row.opt_text("effective_resolver_policy_source")?.as_deref() {
        Some("company_cap") => "company_cap",
        _ => "requested",
    };
    Ok(Interaction {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        issue_id: row.text("issue_id")?,
        kind: row.stored("kind")?,
        idempotency_key: row.opt_text("idempotency_key")?,
        source_comment_id: row.opt_text("source_comment_id")?,
        source_run_id: row.opt_text("source_run_id")?,
        addressee_agent_id: row.opt_text("addressee_agent_id")?,
        addressee_user_id: row.opt_text("addressee_user_id")?,
        title: row.opt_text("title")?,
        summary: row.opt_text("summary")?,
        status: row.stored("status")?,
        continuation_policy: row.stored("continuation_policy")?,
        resolver_policy: requested.unwrap_or(effective),
        requested_resolver_policy: requested.unwrap_or(effective),
        effective_resolver_policy: effective,
        resolver_policy_provenance: provenance,
        effective_resolver_policy_source: source,
        legacy_resolver_policy_aliases: json!({ "requested": null, "effective": null }),
        payload: row.json("payload")?,
        result: row.opt_json("result")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        resolved_by_agent_id: row.opt_text("resolved_by_agent_id")?,
        resolved_by_run_id: row.opt_text("resolved_by_run_id")?,
        resolved_by_user_id: row.opt_text("resolved_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
        resolved_at: row.opt_text("resolved_at")?,
    })
}
