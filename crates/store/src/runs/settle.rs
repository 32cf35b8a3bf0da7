//! What a run's end does to its task: a task still held by the run goes back
//! to `todo` (or `blocked`) and its locks are released, or passes to the run
//! that carries on. Used by every way a run ends (finish, cancel, recovery).

use crate::audit::activity::{self, Entry};
use crate::wakes::queue::{Wake, Woken};
use crate::{now, Result, Tx};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::{RunStatus, WakeSource};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{HeartbeatRun, Issue};
use serde_json::{json, Value};

/// Locks the task a run is on, before the run's row changes: the run ending
/// and its task being reopened then take turns. Without it, on Postgres, a
/// reopen that read the run as still live kept its hold while the ending run
/// read the task as done and kept the hold as a record: an open task held by
/// a finished run (the chaos test's invariant 5). Task before run, the order
/// every task edit takes.
pub(crate) async fn lock_task_of(tx: &mut Tx, run_id: &str) -> Result<()> {
    let on: Option<(Option<String>,)> =
        crate::engine::db::query_as("SELECT issue_id FROM heartbeat_runs WHERE id = $1")
            .bind(run_id)
            .fetch_optional(tx.conn())
            .await?;
    if let Some((Some(issue_id),)) = on {
        tx.lock_row(crate::Locked::Issue, &issue_id).await?;
    }
    Ok(())
}

/// After a run ended: releases its checkout; a failure blocks the task.
pub(crate) async fn settle_task_in(tx: &mut Tx, run: &HeartbeatRun) -> Result<()> {
    let Some(issue) = held_task(tx, run).await? else {
        return Ok(());
    };
    // A finished task keeps the run that finished it, as a record; only open
    // work can be held.
    if matches!(issue.status.as_str(), "done" | "cancelled") {
        return Ok(());
    }
    if run.error_code.as_deref() == Some("rate_limited") {
        return defer(tx, &issue, run).await;
    }
    let failed = matches!(run.status.as_str(), "failed" | "timed_out");
    if failed && issue.status == IssueStatus::InProgress {
        let reason = format!(
            "Its run {} ({}): {}",
            if run.status == RunStatus::TimedOut {
                "timed out"
            } else {
                "failed"
            },
            run.error_code.as_deref().unwrap_or("error"),
            run.error.as_deref().unwrap_or("no reason given"),
        );
        return block(tx, &issue, run, &reason).await;
    }
    release_locks(tx, &issue.id, &run.id).await
}

/// A run the provider refused for a usage limit did no work: its task is
/// handed, checkout and all, to a run of the same agent that waits for the
/// limit to lift (the executor holds it back), so the work is kept, not
/// failed and not retried in a loop.
async fn defer(tx: &mut Tx, issue: &Issue, run: &HeartbeatRun) -> Result<()> {
    let woken = follow_up_wake(
        tx,
        &Actor::system(),
        run,
        Some(&issue.id),
        WakeSource::Automation,
        "system",
        USAGE_LIMIT_REASON,
        json!({ "usageLimitedRunId": run.id }),
    )
    .await?;
    let Some(next) = woken.run else {
        return release_locks(tx, &issue.id, &run.id).await;
    };
    hand_checkout(tx, &issue.id, &run.id, &next.id).await
}

/// Passes the task's checkout from a run that ended to the run carrying on,
/// so the task is never held by a run that is over and no other run can
/// take it meanwhile.
pub(crate) async fn hand_checkout(tx: &mut Tx, issue_id: &str, from: &str, to: &str) -> Result<()> {
    for column in ["checkout_run_id", "execution_run_id"] {
        crate::engine::db::query(&format!(
            "UPDATE issues SET {column} = $3 WHERE id = $1 AND {column} = $2"
        ))
        .bind(issue_id)
        .bind(from)
        .bind(to)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

/// The task `run` holds the checkout or execution lock of.
pub(crate) async fn held_task(tx: &mut Tx, run: &HeartbeatRun) -> Result<Option<Issue>> {
    let Some(issue_id) = &run.issue_id else {
        return Ok(None);
    };
    let held: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM issues WHERE id = $1 AND (checkout_run_id = $2 OR execution_run_id = $2)",
    )
    .bind(issue_id)
    .bind(&run.id)
    .fetch_all(tx.conn())
    .await?
    .pop();
    match held {
        Some(_) => Ok(Some(crate::issues::table::load_in(tx, issue_id).await?)),
        None => Ok(None),
    }
}

pub(crate) async fn release_locks(tx: &mut Tx, issue_id: &str, run_id: &str) -> Result<()> {
    let ts = now();
    for column in ["checkout_run_id", "execution_run_id"] {
        crate::engine::db::query(&format!(
            "UPDATE issues SET {column} = NULL, execution_locked_at = NULL, updated_at = $3 \
             WHERE id = $1 AND {column} = $2"
        ))
        .bind(issue_id)
        .bind(run_id)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

pub(crate) async fn block(
    tx: &mut Tx,
    issue: &Issue,
    run: &HeartbeatRun,
    reason: &str,
) -> Result<()> {
    release_locks(tx, &issue.id, &run.id).await?;
    set_status(tx, issue, IssueStatus::Blocked, run, reason).await
}

/// Moves the task to `status` because of `run`, with the reason in the
/// activity log (the task page and the inbox show it from there).
pub(crate) async fn set_status(
    tx: &mut Tx,
    issue: &Issue,
    status: IssueStatus,
    run: &HeartbeatRun,
    reason: &str,
) -> Result<()> {
    if issue.status == status {
        return Ok(());
    }
    crate::engine::db::query("UPDATE issues SET status = $2, updated_at = $3 WHERE id = $1")
        .bind(&issue.id)
        .bind(status)
        .bind(now())
        .execute(tx.conn())
        .await?;
    activity::record(
        tx,
        &Actor::system(),
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueUpdated,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "changes": { "status": { "from": issue.status, "to": status } },
                "reason": reason,
                "runId": run.id,
            }),
        },
    )
    .await
}

/// The wake reasons of follow-up runs, which their prompts explain.
pub const CONTINUE_REASON: &str = "continue_after_restart";

pub const RETRY_REASON: &str = "retry_failed_run";

pub const USAGE_LIMIT_REASON: &str = "usage_limit_lifted";

/// Queues a run that carries on `run`'s work: same agent and task, and
/// `retry_of_run_id` naming it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn follow_up_wake(
    tx: &mut Tx,
    actor: &Actor,
    run: &HeartbeatRun,
    issue_id: Option<&str>,
    source: WakeSource,
    trigger: &str,
    reason: &str,
    mut payload: Value,
) -> Result<Woken> {
    payload["issueId"] = json!(issue_id);
    // The comments the earlier run was handed are not handed again: each
    // comment reaches one run (a resumed session has them already; the
    // prompt note tells the agent to read the task again).
    let woken = crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        Wake {
            agent_id: run.agent_id.clone(),
            source,
            trigger_detail: Some(trigger.to_string()),
            reason: Some(reason.to_string()),
            payload: Some(payload),
            issue_id: issue_id.map(str::to_string),
            idempotency_key: None,
        },
    )
    .await?;
    if let Some(next) = &woken.run {
        crate::engine::db::query(
            "UPDATE heartbeat_runs SET retry_of_run_id = COALESCE(retry_of_run_id, $2) WHERE id = $1",
        )
        .bind(&next.id)
        .bind(&run.id)
        .execute(tx.conn())
        .await?;
        let next = crate::runs::table::get_in(tx, &next.id).await?;
        return Ok(Woken {
            request: woken.request,
            run: Some(next),
        });
    }
    Ok(woken)
}
