//! A run ending: its outcome stored (text made storable), usage limits, the
//! task settled, the session recorded, work products the result names, the
//! agent back to idle; and cancelling queued runs. Above the runs table.

use crate::audit::activity::{self, Entry};
use crate::runs::sessions::SessionUpdate;
use crate::runs::table::*;
use crate::runs::text::{owned, storable_json};
use crate::{now, Result, Store, Tx};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::HeartbeatRun;
use serde_json::{json, Value};

/// What the executor knows when a run ends.
#[derive(Debug, Clone)]
pub struct Finish {
    pub status: RunStatus,
    pub error: Option<String>,
    pub error_code: Option<String>,
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
    pub usage: Option<Value>,
    pub result: Option<Value>,
    pub stdout_excerpt: Option<String>,
    pub stderr_excerpt: Option<String>,
    pub log_store: Option<String>,
    pub log_ref: Option<String>,
    pub log_bytes: i64,
    pub session_id_before: Option<String>,
    pub session_id_after: Option<String>,
    /// What to do with the task's saved session, in the same transaction.
    pub session: Option<SessionUpdate>,
}

impl Finish {
    /// A run ending `status` with nothing else known yet.
    pub fn new(status: RunStatus) -> Finish {
        Finish {
            status,
            error: None,
            error_code: None,
            exit_code: None,
            signal: None,
            usage: None,
            result: None,
            stdout_excerpt: None,
            stderr_excerpt: None,
            log_store: None,
            log_ref: None,
            log_bytes: 0,
            session_id_before: None,
            session_id_after: None,
            session: None,
        }
    }
}

/// Ends a running run and settles its agent (idle, or error after a failure;
/// a paused or terminated agent stays so) and its task (the run's checkout
/// is released; after a failure the task is `blocked`, see `follow_up`).
/// `None` if the run was not running.
pub async fn finish(store: &Store, run_id: &str, finish: Finish) -> Result<Option<HeartbeatRun>> {
    let mut tx = store.begin().await?;
    crate::runs::settle::lock_task_of(&mut tx, run_id).await?;
    let Some(run) = finish_in(&mut tx, run_id, &finish).await? else {
        return Ok(None);
    };
    crate::runs::settle::settle_task_in(&mut tx, &run).await?;
    crate::issues::chat_rules::settle_turn(&mut tx, &run).await?;
    let run = crate::runs::verdict::record_in(&mut tx, run).await?;
    tx.commit().await?;
    Ok(Some(run))
}

/// Records until when the agent's provider refuses it (the time the CLI
/// named, else a backoff), so its queued runs wait instead of failing again.
async fn limit_usage(tx: &mut Tx, run: &HeartbeatRun, finish: &Finish) -> Result<()> {
    let said = [
        &finish.error,
        &finish.stderr_excerpt,
        &finish.stdout_excerpt,
    ]
    .iter()
    .filter_map(|t| t.as_deref())
    .collect::<Vec<_>>()
    .join("\n");
    let until = paperclip_core::budget::stamp(paperclip_core::thrift::usage_limit_lifts_at(
        &said,
        chrono::Utc::now(),
    ));
    crate::engine::db::query("UPDATE agents SET usage_limited_until = $2 WHERE id = $1")
        .bind(&run.agent_id)
        .bind(&until)
        .execute(tx.conn())
        .await?;
    activity::record(
        tx,
        &Actor::system(),
        Entry {
            company_id: &run.company_id,
            action: Action::AgentUsageLimited,
            entity_type: EntityType::Agent,
            entity_id: &run.agent_id,
            details: json!({ "runId": run.id, "until": until }),
        },
    )
    .await
}

/// [`finish`] inside the caller's transaction, leaving the task to it.
pub(crate) async fn finish_in(
    tx: &mut Tx,
    run_id: &str,
    finish: &Finish,
) -> Result<Option<HeartbeatRun>> {
    let finish = storable_finish(finish.clone());
    let ts = now();
    let done = crate::engine::db::query(
        "UPDATE heartbeat_runs SET status = $2, error = $3, error_code = $4, exit_code = $5, \
         signal = $6, usage_json = $7, result_json = $8, stdout_excerpt = $9, stderr_excerpt = $10, \
         log_store = $11, log_ref = $12, log_bytes = $13, finished_at = $14, updated_at = $14, \
         session_id_before = $15, session_id_after = $16 \
         WHERE id = $1 AND status = 'running'",
    )
    .bind(run_id)
    .bind(finish.status)
    .bind(finish.error.as_deref())
    .bind(finish.error_code.as_deref())
    .bind(finish.exit_code)
    .bind(finish.signal.as_deref())
    .bind(finish.usage.as_ref().map(Value::to_string))
    .bind(finish.result.as_ref().map(Value::to_string))
    .bind(finish.stdout_excerpt.as_deref())
    .bind(finish.stderr_excerpt.as_deref())
    .bind(finish.log_store.as_deref())
    .bind(finish.log_ref.as_deref())
    .bind(finish.log_bytes)
    .bind(&ts)
    .bind(finish.session_id_before.as_deref())
    .bind(finish.session_id_after.as_deref())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if done == 0 {
        return Ok(None);
    }
    let run = get_in(tx, run_id).await?;
    if let Some(update) = &finish.session {
        crate::runs::sessions::apply_in(tx, &run, update).await?;
    }
    crate::runs::context::record_in(
        tx,
        &run,
        finish.result.as_ref(),
        finish.usage.as_ref(),
        finish.session.as_ref(),
    )
    .await?;
    if run.status == RunStatus::Succeeded {
        let skipped =
            crate::thread::work_products::record_run_result(tx, &run, finish.result.as_ref())
                .await?;
        for reason in skipped {
            append_event_in(
                tx,
                &run,
                "work_product.skipped",
                None,
                "warn",
                &reason,
                None,
            )
            .await?;
        }
    }
    // A stop is what someone asked for, not a failure: its wake request is
    // `cancelled` and its lifecycle event is not an error.
    let request_status = match finish.status.as_str() {
        "succeeded" => "completed",
        "cancelled" => "cancelled",
        _ => "failed",
    };
    crate::engine::db::query("UPDATE agent_wakeup_requests SET status = $2, updated_at = $3 WHERE run_id = $1 AND status = 'claimed'")
        .bind(run_id)
        .bind(request_status)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    // A restart is not the agent's failure: it goes back to idle. Nor is a
    // provider's usage limit: its wakes wait for the limit to lift.
    let usage_limited = finish.error_code.as_deref() == Some("rate_limited");
    let agent_failed = matches!(finish.status.as_str(), "failed" | "timed_out")
        && finish.error_code.as_deref() != Some("control_plane_restart")
        && !usage_limited;
    if usage_limited {
        limit_usage(tx, &run, &finish).await?;
    }
    settle_agent(
        tx,
        &run.agent_id,
        agent_failed,
        finish.error.as_deref(),
        &ts,
    )
    .await?;
    let level = match finish.status.as_str() {
        "succeeded" | "cancelled" => "info",
        _ => "error",
    };
    let message = match &finish.error {
        Some(e) => format!("run {}: {e}", finish.status),
        None => format!("run {}", finish.status),
    };
    append_event_in(
        tx,
        &run,
        "lifecycle",
        None,
        level,
        &message,
        Some(json!({ "status": finish.status, "errorCode": finish.error_code })),
    )
    .await?;
    runtime_state_updated(tx, &run, &finish).await?;
    activity::record(
        tx,
        &Actor::system(),
        Entry {
            company_id: &run.company_id,
            action: Action::HeartbeatFinished,
            entity_type: EntityType::HeartbeatRun,
            entity_id: &run.id,
            details: json!({
                "agentId": run.agent_id,
                "issueId": run.issue_id,
                "status": finish.status,
                "errorCode": finish.error_code,
                "exitCode": finish.exit_code,
            }),
        },
    )
    .await?;
    // Re-read: the run as finished, for whoever settles its task.
    Ok(Some(get_in(tx, run_id).await?))
}

/// What the run's end changed in its agent's runtime state (its last run
/// and status, its session, the usage it adds to the totals), on the run's
/// timeline in the transaction that changes it.
async fn runtime_state_updated(tx: &mut Tx, run: &HeartbeatRun, finish: &Finish) -> Result<()> {
    let usage = finish.usage.as_ref();
    let int = |keys: &[&str]| {
        usage.and_then(|u| keys.iter().find_map(|k| u.get(*k).and_then(Value::as_i64)))
    };
    let session_changed =
        finish.session_id_after.is_some() && finish.session_id_after != finish.session_id_before;
    let mut changed = vec!["lastRunId", "lastRunStatus"];
    if session_changed {
        changed.push("sessionId");
    }
    let added = json!({
        "inputTokens": int(&["inputTokens", "input_tokens"]),
        "cachedInputTokens": int(&["cachedInputTokens", "cached_input_tokens"]),
        "outputTokens": int(&["outputTokens", "output_tokens"]),
    });
    if added
        .as_object()
        .is_some_and(|a| a.values().any(|v| !v.is_null()))
    {
        changed.push("usageTotals");
    }
    if finish.error.is_some() {
        changed.push("lastError");
    }
    append_event_in(
        tx,
        run,
        paperclip_core::run_status::RunEventType::RuntimeStateUpdated.as_str(),
        None,
        "info",
        &format!("runtime state updated: {}", changed.join(", ")),
        Some(json!({
            "changed": changed,
            "lastRunId": run.id,
            "lastRunStatus": finish.status,
            "sessionIdBefore": finish.session_id_before,
            "sessionIdAfter": finish.session_id_after,
            "usageAdded": added,
            "lastError": finish.error,
        })),
    )
    .await?;
    Ok(())
}

/// After a run, a running agent with no other run in flight becomes idle
/// (or error, with the reason, after a failure).
async fn settle_agent(
    tx: &mut Tx,
    agent_id: &str,
    failed: bool,
    error: Option<&str>,
    ts: &str,
) -> Result<()> {
    let (others,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM heartbeat_runs WHERE agent_id = $1 AND status = 'running'",
    )
    .bind(agent_id)
    .fetch_one(tx.conn())
    .await?;
    if others > 0 {
        return Ok(());
    }
    let (next, reason) = if failed {
        ("error", error)
    } else {
        ("idle", None)
    };
    crate::engine::db::query(
        "UPDATE agents SET status = $2, error_reason = $3, updated_at = $4 WHERE id = $1 AND status = 'running'",
    )
    .bind(agent_id)
    .bind(next)
    .bind(reason)
    .bind(ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Cancels a run that has not started. Running runs are cancelled by the
/// executor, which stops the process first and then calls [`finish`].
pub async fn cancel_queued(
    store: &Store,
    actor: &Actor,
    run_id: &str,
    reason: &str,
) -> Result<Option<HeartbeatRun>> {
    let mut tx = store.begin().await?;
    crate::runs::settle::lock_task_of(&mut tx, run_id).await?;
    let ts = now();
    let n = crate::engine::db::query(
        "UPDATE heartbeat_runs SET status = 'cancelled', error = $2, error_code = 'cancelled', \
         finished_at = $3, updated_at = $3 WHERE id = $1 AND status = 'queued'",
    )
    .bind(run_id)
    .bind(reason)
    .bind(&ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n == 0 {
        return Ok(None);
    }
    crate::engine::db::query("UPDATE agent_wakeup_requests SET status = 'cancelled', updated_at = $2 WHERE run_id = $1 AND status IN ('queued', 'coalesced')")
        .bind(run_id)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    let run = get_in(&mut tx, run_id).await?;
    append_event_in(
        &mut tx,
        &run,
        "lifecycle",
        None,
        "warn",
        &format!("run cancelled before start: {reason}"),
        None,
    )
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &run.company_id,
            action: Action::HeartbeatCancelled,
            entity_type: EntityType::HeartbeatRun,
            entity_id: run_id,
            details: json!({ "agentId": run.agent_id, "reason": reason, "started": false }),
        },
    )
    .await?;
    crate::runs::settle::settle_task_in(&mut tx, &run).await?;
    let run = crate::runs::verdict::record_in(&mut tx, run).await?;
    tx.commit().await?;
    Ok(Some(run))
}

/// Whose queued runs a stop cancels: an agent's (a pause, a termination, an
/// agent or company budget stop) or those of a project's tasks (its budget's
/// hard stop: a run queued before the pause must not start after it).
pub(crate) enum QueuedOf<'a> {
    Agent(&'a str),
    Project(&'a str),
}

impl QueuedOf<'_> {
    fn id(&self) -> &str {
        match self {
            QueuedOf::Agent(id) | QueuedOf::Project(id) => id,
        }
    }

    /// The queued runs' ids, `$1` being [`Self::id`].
    fn runs(&self) -> &'static str {
        match self {
            QueuedOf::Agent(_) => {
                "SELECT id FROM heartbeat_runs WHERE agent_id = $1 AND status = 'queued'"
            }
            QueuedOf::Project(_) => {
                "SELECT id FROM heartbeat_runs WHERE status = 'queued' \
                 AND issue_id IN (SELECT id FROM issues WHERE project_id = $1)"
            }
        }
    }
}

/// Cancels every queued run of an agent inside the caller's transaction (a
/// pause, a termination, a budget stop), with the wake requests they serve;
/// a wake folded into a run that already ran keeps what it became.
pub(crate) async fn cancel_queued_of_agent_in(
    tx: &mut Tx,
    agent_id: &str,
    reason: &str,
    error_code: &str,
    ts: &str,
) -> Result<u64> {
    cancel_queued_in(tx, QueuedOf::Agent(agent_id), reason, error_code, ts).await
}

/// Cancels the queued runs `of` names, as [`cancel_queued_of_agent_in`].
pub(crate) async fn cancel_queued_in(
    tx: &mut Tx,
    of: QueuedOf<'_>,
    reason: &str,
    error_code: &str,
    ts: &str,
) -> Result<u64> {
    let runs = of.runs();
    // A queued continuation holds its task's checkout: released with it.
    for column in ["checkout_run_id", "execution_run_id"] {
        crate::engine::db::query(&format!(
            "UPDATE issues SET {column} = NULL, updated_at = $2 WHERE {column} IN ({runs})"
        ))
        .bind(of.id())
        .bind(ts)
        .execute(tx.conn())
        .await?;
    }
    crate::engine::db::query(&format!(
        "UPDATE agent_wakeup_requests SET status = 'cancelled', updated_at = $2 \
         WHERE status IN ('queued', 'coalesced') AND run_id IN ({runs})"
    ))
    .bind(of.id())
    .bind(ts)
    .execute(tx.conn())
    .await?;
    let n = crate::engine::db::query(&format!(
        "UPDATE heartbeat_runs SET status = 'cancelled', error = $2, error_code = $3, \
         finished_at = $4, updated_at = $4 WHERE id IN ({runs})"
    ))
    .bind(of.id())
    .bind(reason)
    .bind(error_code)
    .bind(ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    Ok(n)
}

pub(crate) fn storable_finish(f: Finish) -> Finish {
    Finish {
        status: f.status,
        error: owned(f.error),
        error_code: owned(f.error_code),
        exit_code: f.exit_code,
        signal: owned(f.signal),
        usage: f.usage.map(storable_json),
        result: f.result.map(storable_json),
        stdout_excerpt: owned(f.stdout_excerpt),
        stderr_excerpt: owned(f.stderr_excerpt),
        log_store: f.log_store,
        log_ref: owned(f.log_ref),
        log_bytes: f.log_bytes,
        session_id_before: owned(f.session_id_before),
        session_id_after: owned(f.session_id_after),
        session: f.session.map(|s| SessionUpdate {
            adapter_type: s.adapter_type,
            task_key: s.task_key,
            session_id: owned(s.session_id),
            error: owned(s.error),
        }),
    }
}
