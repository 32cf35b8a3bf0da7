//! Where a wake goes: into the queued run of the same agent and task, or a
//! queued run of its own. At most one run per (agent, task) waits at a time
//! (the partial unique index `heartbeat_runs_one_queued`, migration 5), and
//! the placement is correct with concurrent writers on Postgres (READ
//! COMMITTED), not only under SQLite's single writer.

use paperclip_core::heartbeat::*;
use paperclip_core::model::{HeartbeatRun, WakeupRequest};
use serde_json::{json, Value};

use crate::engine::row::RowExt;
use crate::{new_id, Error, Result, StoreEvent, Tx};

/// A wake can lose a race at most twice in a row (its queued run claimed,
/// then a concurrent insert winning the index); more means something is wrong.
const ATTEMPTS: usize = 5;

pub(crate) enum Placed {
    /// A new queued run, started by this wake.
    Queued(HeartbeatRun),
    /// An existing queued run of the same agent and task absorbed it.
    Coalesced(HeartbeatRun),
}

/// The run context a wake starts with. `commentIds` collects every comment a
/// run has been woken for, so a fold adds to it instead of replacing it.
pub(crate) fn context(wake: &Wake) -> Value {
    let mut context = json!({
        "issueId": wake.issue_id,
        // Upstream's names for the task a run is keyed by.
        "taskId": wake.issue_id,
        "taskKey": wake.issue_id,
        "wakeReason": wake.reason,
        "wakeSource": wake.source.as_str(),
        "triggerDetail": wake.trigger_detail,
        // The same under upstream's name, which its agents read.
        "wakeTriggerDetail": wake.trigger_detail,
        "payload": wake.payload,
    });
    // A chat turn's marks go to the top, where upstream's agents read them.
    for key in [
        "conversationMode",
        "conversationSessionGeneration",
        "wakeCommentId",
    ] {
        if let Some(value) = wake.payload.as_ref().and_then(|p| p.get(key)) {
            context[key] = value.clone();
        }
    }
    let mut ids = comments_of(wake);
    if !ids.is_empty() {
        ids.sort();
        ids.dedup();
        context["commentIds"] = json!(ids);
    }
    context
}

pub(crate) async fn place(
    tx: &mut Tx,
    company_id: &str,
    wake: &Wake,
    request_id: &str,
    ts: &str,
) -> Result<Placed> {
    for _ in 0..ATTEMPTS {
        if let Some(waiting) = queued_run(tx, &wake.agent_id, wake.issue_id.as_deref()).await? {
            if let Some(run) = fold(tx, &waiting, wake, ts).await? {
                return Ok(Placed::Coalesced(run));
            }
            // Claimed between the lookup and the fold: it is running now and
            // cannot serve this wake, so a new run must.
            continue;
        }
        if let Some(run) = insert(tx, company_id, wake, request_id, ts).await? {
            return Ok(Placed::Queued(run));
        }
        // A concurrent wake inserted the queued run first; fold into it.
    }
    Err(Error::conflict(
        "The agent's queue changed too often to place the wake; retry",
        Some(json!({ "agentId": wake.agent_id, "issueId": wake.issue_id })),
    ))
}

/// The comment a wake is about, if any.
fn comments_of(wake: &Wake) -> Vec<String> {
    wake.payload
        .as_ref()
        .and_then(|p| p.get("commentId")?.as_str().map(str::to_string))
        .into_iter()
        .collect()
}

/// The `commentIds` of a run context.
fn comment_ids(context: &Value) -> Vec<String> {
    context
        .get("commentIds")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

async fn queued_run(tx: &mut Tx, agent_id: &str, issue_id: Option<&str>) -> Result<Option<String>> {
    // Read to the end rather than fetch_optional: a SQLite fetch stream
    // dropped part way can leave the worker reading another statement's rows.
    let row: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE agent_id = $1 AND status = 'queued' \
         AND (issue_id = $2 OR (issue_id IS NULL AND $2 IS NULL)) ORDER BY id LIMIT 1",
    )
    .bind(agent_id)
    .bind(issue_id)
    .fetch_all(tx.conn())
    .await?
    .pop();
    Ok(row.map(|r| r.0))
}

/// Folds the wake into a run that is still queued; `None` if it no longer is.
/// The guarded UPDATE comes first so it holds the row lock while the context
/// is merged: a concurrent fold waits and then merges into this one's result.
async fn fold(tx: &mut Tx, run_id: &str, wake: &Wake, ts: &str) -> Result<Option<HeartbeatRun>> {
    let locked = crate::engine::db::query(
        "UPDATE heartbeat_runs SET coalesced_count = coalesced_count + 1, updated_at = $2 \
         WHERE id = $1 AND status = 'queued' RETURNING context_snapshot",
    )
    .bind(run_id)
    .bind(ts)
    .fetch_all(tx.conn())
    .await?
    .pop();
    let Some(row) = locked else {
        return Ok(None);
    };
    let merged = merge(&row.json("context_snapshot")?, wake);
    crate::engine::db::query(
        "UPDATE heartbeat_runs SET wake_reason = $2, context_snapshot = $3 WHERE id = $1",
    )
    .bind(run_id)
    .bind(wake.reason.as_deref())
    .bind(merged.to_string())
    .execute(tx.conn())
    .await?;
    Ok(Some(crate::runs::table::get_in(tx, run_id).await?))
}

/// The latest wake's reason and payload, plus every comment id so far,
/// oldest first (ids are time-ordered UUIDv7).
fn merge(old: &Value, wake: &Wake) -> Value {
    let mut ids = comment_ids(old);
    // A run queued before commentIds existed carries its one comment here.
    if ids.is_empty() {
        ids.extend(
            old.pointer("/payload/commentId")
                .and_then(Value::as_str)
                .map(str::to_string),
        );
    }
    ids.extend(comments_of(wake));
    ids.sort();
    ids.dedup();
    let mut merged = context(wake);
    if !ids.is_empty() {
        merged["commentIds"] = json!(ids);
    }
    merged
}

/// Inserts a queued run; `None` when the unique index says another queued run
/// of this agent and task exists (committed by a concurrent wake meanwhile).
/// `ON CONFLICT DO NOTHING` rather than catching the error: on Postgres a
/// failed statement would abort the whole transaction.
async fn insert(
    tx: &mut Tx,
    company_id: &str,
    wake: &Wake,
    request_id: &str,
    ts: &str,
) -> Result<Option<HeartbeatRun>> {
    let run_id = new_id();
    let context = context(wake);
    let inserted = crate::engine::db::query(
        "INSERT INTO heartbeat_runs (id, company_id, agent_id, invocation_source, trigger_detail, \
         status, wakeup_request_id, issue_id, wake_reason, context_snapshot, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10, $10) ON CONFLICT DO NOTHING",
    )
    .bind(&run_id)
    .bind(company_id)
    .bind(&wake.agent_id)
    .bind(wake.source.as_str())
    .bind(wake.trigger_detail.as_deref())
    .bind(request_id)
    .bind(wake.issue_id.as_deref())
    .bind(wake.reason.as_deref())
    .bind(context.to_string())
    .bind(ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(None);
    }
    let run = crate::runs::table::get_in(tx, &run_id).await?;
    crate::runs::table::append_event_in(
        tx,
        &run,
        "lifecycle",
        None,
        "info",
        "run queued",
        Some(context),
    )
    .await?;
    tx.announce(StoreEvent::RunQueued {
        company_id: company_id.to_string(),
        agent_id: wake.agent_id.clone(),
        run_id,
    });
    Ok(Some(run))
}

#[derive(Debug, Clone)]
pub struct Wake {
    pub agent_id: String,
    pub source: WakeSource,
    /// `manual | ping | callback | system`.
    pub trigger_detail: Option<String>,
    pub reason: Option<String>,
    pub payload: Option<Value>,
    pub issue_id: Option<String>,
    pub idempotency_key: Option<String>,
}

/// What became of a wake.
#[derive(Debug, Clone)]
pub struct Woken {
    pub request: WakeupRequest,
    /// The run that will serve it (new or coalesced into); none when skipped.
    pub run: Option<HeartbeatRun>,
}
