//! Making decisions: one from an agent's issue-scoped run, or a bundle of
//! them in one transaction. The run names the origin (agent, issue); every
//! issue an effect names must be in the company, and its state then is kept
//! as the target's snapshot (a strict effect runs only on an unchanged one).

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::decision::{
    Continuation, DecisionStatus, Effect, NewBundle, NewDecision, DEFAULT_TTL_DAYS, MAX_TTL_DAYS,
    OPEN_CAP,
};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::audit::activity::{self, Entry};
use crate::decisions::read::{get_in, map};
use crate::engine::row::RowExt;
use crate::engine::sql::{json_array, json_values, ListOf};
use crate::{new_id, now, Error, Result, Store, Tx};

/// The run a decision comes from: its agent's, in the company, on an issue.
pub struct Origin<'a> {
    pub company_id: &'a str,
    pub agent_id: &'a str,
    pub run_id: &'a str,
}

/// What the route answers: the decision and whether this call made it
/// (an idempotent replay answers the existing one).
pub async fn create(
    store: &Store,
    actor: &Actor,
    origin: Origin<'_>,
    input: NewDecision,
) -> Result<Value> {
    let mut tx = store.begin().await?;
    let issue_id = origin_issue(&mut tx, &origin).await?;
    let decision = create_in(&mut tx, actor, &origin, &issue_id, None, &input).await?;
    tx.commit().await?;
    Ok(decision)
}

pub async fn create_bundle(
    store: &Store,
    actor: &Actor,
    origin: Origin<'_>,
    input: NewBundle,
) -> Result<Value> {
    let mut tx = store.begin().await?;
    let issue_id = origin_issue(&mut tx, &origin).await?;
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO decision_bundles (id, company_id, title, summary, origin_agent_id, origin_issue_id, \
         origin_run_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(origin.company_id)
    .bind(input.title.trim())
    .bind(&input.summary)
    .bind(origin.agent_id)
    .bind(&issue_id)
    .bind(origin.run_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let mut decisions = Vec::with_capacity(input.decisions.len());
    for item in &input.decisions {
        decisions.push(create_in(&mut tx, actor, &origin, &issue_id, Some(&id), item).await?);
    }
    tx.commit().await?;
    Ok(json!({
        "id": id, "companyId": origin.company_id, "title": input.title.trim(), "summary": input.summary,
        "originAgentId": origin.agent_id, "originIssueId": issue_id, "originRunId": origin.run_id,
        "createdAt": ts, "decisions": decisions,
    }))
}

/// The issue of the origin run; a run that is not the agent's (in the
/// company) is refused, as upstream refuses it (403), and a run on no
/// issue is a rule violation (422).
async fn origin_issue(tx: &mut Tx, origin: &Origin<'_>) -> Result<String> {
    let row: Option<(Option<String>,)> = crate::engine::db::query_as(
        "SELECT issue_id FROM heartbeat_runs WHERE id = $1 AND company_id = $2 AND agent_id = $3",
    )
    .bind(origin.run_id)
    .bind(origin.company_id)
    .bind(origin.agent_id)
    .fetch_optional(tx.conn())
    .await?;
    let Some((issue,)) = row else {
        return Err(Error::forbidden(
            "Decision provenance requires the origin run",
        ));
    };
    issue.ok_or_else(|| Error::rule("Origin run is not issue-scoped"))
}

async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    origin: &Origin<'_>,
    issue_id: &str,
    bundle_id: Option<&str>,
    input: &NewDecision,
) -> Result<Value> {
    let options = serde_json::to_value(&input.options).unwrap_or(Value::Null);
    let inputs = input
        .inputs
        .as_ref()
        .map(|i| serde_json::to_value(i).unwrap_or(Value::Null));
    if let Some(key) = &input.idempotency_key {
        if let Some(existing) = by_key(tx, origin.company_id, key).await? {
            return same_or_conflict(existing, input, &options, &inputs);
        }
    }
    let (open,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM decisions WHERE company_id = $1 AND origin_agent_id = $2 AND status = 'open'",
    )
    .bind(origin.company_id)
    .bind(origin.agent_id)
    .fetch_one(tx.conn())
    .await?;
    if open >= OPEN_CAP {
        return Err(Error::conflict(
            "Open decision cap reached",
            Some(json!({ "code": "decision_open_cap", "cap": OPEN_CAP })),
        ));
    }
    let now_at = chrono::Utc::now();
    let expires = match &input.expires_at {
        Some(text) => chrono::DateTime::parse_from_rfc3339(text)
            .map_err(|_| Error::invalid("expiresAt", "expiresAt must be an ISO-8601 date-time"))?
            .with_timezone(&chrono::Utc),
        None => now_at + chrono::Duration::days(DEFAULT_TTL_DAYS),
    };
    if expires <= now_at || expires > now_at + chrono::Duration::days(MAX_TTL_DAYS) {
        return Err(Error::rule("expiresAt must be within 30 days"));
    }
    let snapshots = snapshots(tx, origin.company_id, &input.options).await?;
    let id = new_id();
    let ts = now();
    let spec = json!({ "decisionId": id, "options": options, "targetSnapshots": snapshots });
    // A digest of what the board is shown, checked again before its effects
    // run: a stored decision whose options changed since is refused.
    let signed = format!(
        "sha256:{}",
        hex(&Sha256::digest(spec.to_string().as_bytes()))
    );
    let continuation = input.continuation_policy.unwrap_or(Continuation::None);
    let inserted = crate::engine::db::query(
        "INSERT INTO decisions (id, company_id, bundle_id, origin_agent_id, origin_issue_id, origin_run_id, \
         rule_key, title, body, options, inputs, status, expires_at, idempotency_key, signed_spec, \
         target_snapshots, continuation_policy, metadata, created_at, updated_at) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19) \
         ON CONFLICT DO NOTHING",
    )
    .bind(&id)
    .bind(origin.company_id)
    .bind(bundle_id)
    .bind(origin.agent_id)
    .bind(issue_id)
    .bind(origin.run_id)
    .bind(input.rule_key.as_deref().map(str::trim))
    .bind(input.title.trim())
    .bind(&input.body)
    .bind(options.to_string())
    .bind(inputs.as_ref().map(Value::to_string))
    .bind(DecisionStatus::Open.as_str())
    .bind(expires.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
    .bind(input.idempotency_key.as_deref())
    .bind(&signed)
    .bind(snapshots.to_string())
    .bind(continuation.as_str())
    .bind(Value::Object(input.metadata.clone().unwrap_or_default()).to_string())
    .bind(&ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if inserted == 0 {
        // Another request took the key first (only possible on Postgres).
        let key = input.idempotency_key.as_deref().unwrap_or_default();
        let existing = by_key(tx, origin.company_id, key)
            .await?
            .ok_or_else(|| Error::conflict("Decision idempotency key already used", None))?;
        return same_or_conflict(existing, input, &options, &inputs);
    }
    let targets: Vec<&String> = snapshots
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    for target in &targets {
        crate::engine::db::query("INSERT INTO decision_target_issues (decision_id, issue_id, company_id) VALUES ($1, $2, $3)")
            .bind(&id)
            .bind(target.as_str())
            .bind(origin.company_id)
            .execute(tx.conn())
            .await?;
    }
    activity::record(
        tx,
        actor,
        Entry {
            company_id: origin.company_id,
            action: Action::DecisionCreated,
            entity_type: EntityType::Decision,
            entity_id: &id,
            details: json!({
                "originIssueId": issue_id, "originAgentId": origin.agent_id, "title": input.title.trim(),
                "ruleKey": input.rule_key, "bundleId": bundle_id,
            }),
        },
    )
    .await?;
    get_in(tx, &id).await
}

async fn by_key(tx: &mut Tx, company_id: &str, key: &str) -> Result<Option<Value>> {
    let row = crate::engine::db::query(
        "SELECT * FROM decisions WHERE company_id = $1 AND idempotency_key = $2",
    )
    .bind(company_id)
    .bind(key)
    .fetch_optional(tx.conn())
    .await?;
    row.as_ref().map(map).transpose()
}

/// A replay with the same payload answers the first decision; another
/// payload under the key is a conflict.
fn same_or_conflict(
    existing: Value,
    input: &NewDecision,
    options: &Value,
    inputs: &Option<Value>,
) -> Result<Value> {
    let same = existing["title"] == input.title.trim()
        && existing["body"] == input.body.as_str()
        && &existing["options"] == options
        && existing["inputs"] == inputs.clone().unwrap_or(Value::Null);
    if same {
        Ok(existing)
    } else {
        Err(Error::conflict(
            "Decision idempotency key already used with a different payload",
            Some(json!({ "code": "decision_idempotency_conflict", "decisionId": existing["id"] })),
        ))
    }
}

/// Every issue the options name, as it is now: all in the company (else
/// 422), read in one query; a tree cancel's target also records its
/// descendants, the scope the board agrees to cancel.
async fn snapshots(
    tx: &mut Tx,
    company_id: &str,
    options: &[paperclip_core::decision::DecisionOption],
) -> Result<Value> {
    let mut ids: Vec<String> = Vec::new();
    for effect in options.iter().flat_map(|o| &o.effects) {
        for id in effect.issue_ids() {
            if !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        }
    }
    let mut out = Map::new();
    if ids.is_empty() {
        return Ok(Value::Object(out));
    }
    let backend = tx.conn().backend();
    let sql = format!(
        "SELECT id, status, assignee_agent_id, assignee_user_id, updated_at FROM issues \
         WHERE company_id = $1 AND id IN {}",
        json_values(backend, "$2", ListOf::Ids)
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(json_array(ids.iter()))
        .fetch_all(tx.conn())
        .await?;
    if rows.len() != ids.len() {
        return Err(Error::rule(
            "All referenced issues must exist in the company",
        ));
    }
    for row in &rows {
        out.insert(
            row.text("id")?,
            json!({
                "status": row.text("status")?, "assigneeAgentId": row.opt_text("assignee_agent_id")?,
                "assigneeUserId": row.opt_text("assignee_user_id")?, "updatedAt": row.text("updated_at")?,
            }),
        );
    }
    for effect in options.iter().flat_map(|o| &o.effects) {
        if let Effect::CancelIssueTree {
            target_issue_id, ..
        } = effect
        {
            let descendants = descendants(tx, company_id, target_issue_id).await?;
            if let Some(Value::Object(snap)) = out.get_mut(target_issue_id.as_str()) {
                snap.insert("descendantCount".into(), json!(descendants.len()));
                snap.insert("descendantIds".into(), json!(descendants));
            }
        }
    }
    Ok(Value::Object(out))
}

/// The issues under `root`, breadth first (one query per level).
pub(crate) async fn descendants(tx: &mut Tx, company_id: &str, root: &str) -> Result<Vec<String>> {
    let backend = tx.conn().backend();
    let sql = format!(
        "SELECT id FROM issues WHERE company_id = $1 AND parent_id IN {} ORDER BY id",
        json_values(backend, "$2", ListOf::Ids)
    );
    let mut out: Vec<String> = Vec::new();
    let mut level = vec![root.to_string()];
    while !level.is_empty() && out.len() < 10_000 {
        let rows: Vec<(String,)> = crate::engine::db::query_as(&sql)
            .bind(company_id)
            .bind(json_array(level.iter()))
            .fetch_all(tx.conn())
            .await?;
        level = rows
            .into_iter()
            .map(|r| r.0)
            .filter(|id| id != root && !out.contains(id))
            .collect();
        out.extend(level.iter().cloned());
    }
    Ok(out)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
