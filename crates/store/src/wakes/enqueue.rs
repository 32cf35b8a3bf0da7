//! The wakeup coordinator's queue: the one entry point for every wake.
//!
//! A wake is recorded as an `agent_wakeup_requests` row and, unless it is
//! skipped or folded into the run already waiting for the same agent and
//! task (`wake_queue`), a `queued` run. The row says which: `skipped` with
//! its `skip_reason`, or `queued`/`coalesced` with the `run_id` serving it. All
//! of it happens inside the caller's transaction, so the change that caused
//! a wake (an assignment, a comment) and the wake itself commit together.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::heartbeat::{
    skip_reason, wants_work_check, HeartbeatPolicy, WakeSkipReason, WakeSource, WakeStatus,
};
use paperclip_core::model::WakeupRequest;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::wakes::loops::*;
use crate::wakes::queue::{Placed, Wake, Woken};
use crate::Error;
use crate::{new_id, now, Result, Store, Tx};

pub async fn enqueue(store: &Store, actor: &Actor, wake: Wake) -> Result<Woken> {
    let mut tx = store.begin().await?;
    let woken = enqueue_in(&mut tx, actor, wake).await?;
    tx.commit().await?;
    Ok(woken)
}

pub(crate) async fn enqueue_in(tx: &mut Tx, actor: &Actor, wake: Wake) -> Result<Woken> {
    // A wake one agent causes another on a task counts toward the task's
    // loop breaker, whose row is locked before the agent's (see wake_loops).
    let counted_issue = wake
        .issue_id
        .as_deref()
        .filter(|_| actor.kind == ActorKind::Agent && actor.id != wake.agent_id);
    if let Some(issue_id) = counted_issue {
        crate::wakes::loops::lock(tx, issue_id).await?;
    }
    // Lock the agent row before reading its status: a pause committing
    // between the read and the insert would otherwise leave a queued run
    // behind a paused agent (Postgres; SQLite has one writer anyway).
    crate::engine::db::query("UPDATE agents SET updated_at = updated_at WHERE id = $1")
        .bind(&wake.agent_id)
        .execute(tx.conn())
        .await?;
    let agent = crate::org::agents::brief_in(tx, &wake.agent_id).await?;
    if let Some(key) = &wake.idempotency_key {
        let existing = crate::engine::db::query(
            "SELECT * FROM agent_wakeup_requests WHERE agent_id = $1 AND idempotency_key = $2",
        )
        .bind(&agent.id)
        .bind(key)
        .fetch_optional(tx.conn())
        .await?;
        if let Some(row) = existing {
            let request = map(&row)?;
            let run = match &request.run_id {
                Some(id) => Some(crate::runs::table::get_in(tx, id).await?),
                None => None,
            };
            return Ok(Woken { request, run });
        }
    }
    let ts = now();
    let policy = HeartbeatPolicy::from_runtime_config(&agent.runtime_config);
    let status = agent.status;
    let request_id = new_id();
    // Only a timer wake of an agent that may run asks whether there is
    // anything to do; a wake with a cause (an assignment, a comment) is the
    // work.
    let runnable = skip_reason(
        status,
        agent.pause_reason.as_deref(),
        &policy,
        wake.source,
        false,
    )
    .is_none();
    let work = if runnable && wants_work_check(&policy, wake.source) {
        crate::wakes::idle::work_for(tx, &agent.id).await?
    } else {
        None
    };
    let idle = wants_work_check(&policy, wake.source) && work.is_none();
    let mut skip = skip_reason(
        status,
        agent.pause_reason.as_deref(),
        &policy,
        wake.source,
        idle,
    );
    let caused = matches!(wake.source, WakeSource::Assignment | WakeSource::Automation);
    if skip.is_none() && caused && actor.agent_id() == Some(agent.id.as_str()) {
        // Nothing an agent does wakes itself: its own comment, mention or
        // hand-off is already in the run that made it. (An explicit wakeup
        // it asks for is a request, not a side effect, and stands.)
        skip = Some(WakeSkipReason::SelfWake);
    }
    if let (None, Some(issue_id)) = (skip, counted_issue) {
        if crate::wakes::loops::count(tx, actor, issue_id, &ts).await? {
            skip = Some(WakeSkipReason::LoopHeld);
        }
    }
    if let (None, Some(issue_id)) = (skip, wake.issue_id.as_deref()) {
        if crate::org::projects::paused_project_of(tx, issue_id)
            .await?
            .is_some()
        {
            skip = Some(WakeSkipReason::BudgetBlocked);
        }
    }
    let (request_status, skip, run) = if let Some(reason) = skip {
        (WakeStatus::Skipped, Some(reason), None)
    } else {
        match crate::wakes::queue::place(tx, &agent.company_id, &wake, &request_id, &ts).await? {
            Placed::Queued(run) => (WakeStatus::Queued, None, Some(run)),
            Placed::Coalesced(run) => (WakeStatus::Coalesced, None, Some(run)),
        }
    };
    // An idle agent's timer is skipped every interval; the feed gets one
    // row when it goes idle, not one per interval (the wake list has each).
    let quiet = skip == Some(WakeSkipReason::NoWork) && {
        let last: Option<(Option<String>,)> = crate::engine::db::query_as(
            "SELECT skip_reason FROM agent_wakeup_requests WHERE agent_id = $1 \
             ORDER BY created_at DESC, id DESC LIMIT 1",
        )
        .bind(&agent.id)
        .fetch_optional(tx.conn())
        .await?;
        matches!(last, Some((Some(r),)) if r == WakeSkipReason::NoWork.as_str())
    };
    crate::engine::db::query(
        "INSERT INTO agent_wakeup_requests (id, company_id, agent_id, source, trigger_detail, reason, \
         payload, issue_id, requested_by_actor_type, requested_by_actor_id, idempotency_key, status, \
         skip_reason, run_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)",
    )
    .bind(&request_id)
    .bind(&agent.company_id)
    .bind(&agent.id)
    .bind(wake.source.as_str())
    .bind(wake.trigger_detail.as_deref())
    .bind(wake.reason.as_deref())
    .bind(wake.payload.as_ref().map(Value::to_string))
    .bind(wake.issue_id.as_deref())
    .bind(actor.kind.as_str())
    .bind(&actor.id)
    .bind(wake.idempotency_key.as_deref())
    .bind(request_status.as_str())
    .bind(skip.map(WakeSkipReason::as_str))
    .bind(run.as_ref().map(|r| r.id.as_str()))
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let action = match request_status {
        WakeStatus::Skipped => Action::HeartbeatSkipped,
        WakeStatus::Coalesced => Action::HeartbeatCoalesced,
        _ => Action::HeartbeatQueued,
    };
    if !quiet {
        activity::record(
            tx,
            actor,
            Entry {
                company_id: &agent.company_id,
                action,
                entity_type: EntityType::Agent,
                entity_id: &agent.id,
                details: json!({
                    "wakeupRequestId": request_id,
                    "runId": run.as_ref().map(|r| r.id.clone()),
                    "source": wake.source.as_str(),
                    "reason": wake.reason,
                    "issueId": wake.issue_id,
                    "skipReason": skip,
                    "work": work,
                }),
            },
        )
        .await?;
    }
    let row = crate::engine::db::query("SELECT * FROM agent_wakeup_requests WHERE id = $1")
        .bind(&request_id)
        .fetch_one(tx.conn())
        .await?;
    Ok(Woken {
        request: map(&row)?,
        run,
    })
}

fn map(row: &DbRow) -> Result<WakeupRequest> {
    Ok(WakeupRequest {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        agent_id: row.text("agent_id")?,
        source: row.stored("source")?,
        trigger_detail: row.opt_text("trigger_detail")?,
        reason: row.opt_text("reason")?,
        payload: row.opt_json("payload")?,
        issue_id: row.opt_text("issue_id")?,
        idempotency_key: row.opt_text("idempotency_key")?,
        status: row.stored("status")?,
        skip_reason: row.opt_stored("skip_reason")?,
        run_id: row.opt_text("run_id")?,
        coalesced_count: row.int("coalesced_count")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

/// One wake of an agent and what became of it: skipped (and why), or the
/// run that served it and how that run ended.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WakeRecord {
    #[serde(flatten)]
    pub request: WakeupRequest,
    pub run_status: Option<paperclip_core::heartbeat::RunStatus>,
    pub run_error_code: Option<String>,
    /// The task's identifier (`ACM-12`), for people.
    pub issue_identifier: Option<String>,
}

/// The agent's wakes, newest first; `before` is the `createdAt` of the last
/// one already seen (the next page).
pub async fn list(
    store: &Store,
    agent_id: &str,
    status: Option<WakeStatus>,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<WakeRecord>> {
    let rows = crate::engine::db::query(
        "SELECT w.*, r.status AS run_status, r.error_code AS run_error_code, i.identifier AS issue_identifier \
         FROM agent_wakeup_requests w \
         LEFT JOIN heartbeat_runs r ON r.id = w.run_id \
         LEFT JOIN issues i ON i.id = w.issue_id \
         WHERE w.agent_id = $1 AND (w.status = $2 OR $2 IS NULL) AND (w.created_at < $3 OR $3 IS NULL) \
         ORDER BY w.created_at DESC, w.id DESC LIMIT $4",
    )
    .bind(agent_id)
    .bind(status.map(WakeStatus::as_str))
    .bind(before)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(WakeRecord {
                request: map(row)?,
                run_status: row.opt_stored("run_status")?,
                run_error_code: row.opt_text("run_error_code")?,
                issue_identifier: row.opt_text("issue_identifier")?,
            })
        })
        .collect()
}

/// How many of the company's (or one agent's) wakes since `since` were
/// skipped, per reason, most first.
pub async fn skipped_since(
    store: &Store,
    company_id: &str,
    agent_id: Option<&str>,
    since: &str,
) -> Result<Vec<(String, i64)>> {
    let rows: Vec<(Option<String>, i64)> = crate::engine::db::query_as(
        "SELECT skip_reason, COUNT(*) FROM agent_wakeup_requests \
         WHERE company_id = $1 AND (agent_id = $2 OR $2 IS NULL) AND created_at >= $3 AND status = 'skipped' \
         GROUP BY skip_reason ORDER BY COUNT(*) DESC",
    )
    .bind(company_id)
    .bind(agent_id)
    .bind(since)
    .fetch_all(store.pool())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(r, n)| (r.unwrap_or_else(|| "unknown".into()), n))
        .collect())
}

/// The board lifts a hold: the count starts over and each agent whose wakes
/// were held gets one wake on the task.
pub async fn release(store: &Store, actor: &Actor, issue_id: &str) -> Result<Vec<Woken>> {
    let mut tx = store.begin().await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    let held_at: Option<String> = crate::engine::db::query_as::<(Option<String>,)>(
        "SELECT held_at FROM issue_wake_loops WHERE issue_id = $1",
    )
    .bind(&issue.id)
    .fetch_optional(tx.conn())
    .await?
    .and_then(|(h,)| h);
    let Some(held_at) = held_at else {
        return Err(Error::conflict(
            "Wakes on this task are not held",
            Some(json!({ "issueId": issue.id })),
        ));
    };
    let agents: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT DISTINCT agent_id FROM agent_wakeup_requests \
         WHERE issue_id = $1 AND skip_reason = $2 AND created_at >= $3 ORDER BY agent_id",
    )
    .bind(&issue.id)
    .bind(paperclip_core::heartbeat::WakeSkipReason::LoopHeld.as_str())
    .bind(&held_at)
    .fetch_all(tx.conn())
    .await?;
    reset(&mut tx, &issue.id).await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueWakeLoopReleased,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({ "heldAt": held_at, "agentIds": agents.iter().map(|a| &a.0).collect::<Vec<_>>() }),
        },
    )
    .await?;
    let mut woken = Vec::new();
    for (agent_id,) in agents {
        woken.push(
            crate::wakes::enqueue::enqueue_in(
                &mut tx,
                actor,
                Wake {
                    agent_id,
                    source: WakeSource::Automation,
                    trigger_detail: Some("system".into()),
                    reason: Some("wake_loop_released".into()),
                    payload: Some(json!({ "issueId": issue.id, "identifier": issue.identifier })),
                    issue_id: Some(issue.id.clone()),
                    idempotency_key: None,
                },
            )
            .await?,
        );
    }
    tx.commit().await?;
    Ok(woken)
}

/// One wake of a task, with when its run started and ended.
#[derive(Debug, Clone)]
pub struct IssueWake {
    pub record: WakeRecord,
    pub run_started_at: Option<String>,
    pub run_finished_at: Option<String>,
}

/// A task's wakes since `since`, newest first (at most `limit`), and how
/// many there were in all.
pub async fn for_issue(
    store: &Store,
    issue_id: &str,
    since: &str,
    limit: i64,
) -> Result<(Vec<IssueWake>, i64)> {
    let rows = crate::engine::db::query(
        "SELECT w.*, r.status AS run_status, r.error_code AS run_error_code, i.identifier AS issue_identifier, \
         r.started_at AS run_started_at, r.finished_at AS run_finished_at \
         FROM agent_wakeup_requests w \
         LEFT JOIN heartbeat_runs r ON r.id = w.run_id \
         LEFT JOIN issues i ON i.id = w.issue_id \
         WHERE w.issue_id = $1 AND w.created_at >= $2 \
         ORDER BY w.created_at DESC, w.id DESC LIMIT $3",
    )
    .bind(issue_id)
    .bind(since)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    let (count,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM agent_wakeup_requests WHERE issue_id = $1 AND created_at >= $2",
    )
    .bind(issue_id)
    .bind(since)
    .fetch_one(store.pool())
    .await?;
    let wakes = rows
        .iter()
        .map(|row| {
            Ok(IssueWake {
                record: WakeRecord {
                    request: map(row)?,
                    run_status: row.opt_stored("run_status")?,
                    run_error_code: row.opt_text("run_error_code")?,
                    issue_identifier: row.opt_text("issue_identifier")?,
                },
                run_started_at: row.opt_text("run_started_at")?,
                run_finished_at: row.opt_text("run_finished_at")?,
            })
        })
        .collect::<Result<_>>()?;
    Ok((wakes, count))
}
