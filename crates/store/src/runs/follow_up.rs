//! What becomes of a run's task when the run ends, so that no open task is
//! left checked out by a run that is over:
//! - a run that ended releases the checkout of its open task (a done or
//!   cancelled one keeps it, as the record of who finished it); a failed or timed-out
//!   one leaves its in-progress task `blocked` (the board sees it, with the
//!   run's error, and can Retry), a stopped or finished one leaves the status
//!   as it is;
//! - a run lost with a dead server hands its task to a continuation run of the
//!   same agent (which resumes the CLI session), at most [`CONTINUATIONS`]
//!   times in a row, then the task is `blocked` with the reason;
//! - Retry from the board starts a new run on a failed run's task.
//!
//! Each happens in the transaction that ends the run (or queues the retry).

use crate::runs::settle::*;
pub use crate::runs::settle::{CONTINUE_REASON, RETRY_REASON, USAGE_LIMIT_REASON};

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{HeartbeatRun, Issue};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::runs::finish::Finish;
use crate::wakes::queue::Woken;
use crate::{Error, Result, Store, Tx};

/// How many continuation runs in a row a task gets after restarts before it
/// is blocked: a task whose run dies with the server every time (it crashes
/// it, say) must not loop forever.
pub const CONTINUATIONS: i64 = 3;

/// What restart recovery did with a lost run's task.
#[derive(Debug, Clone, PartialEq)]
pub enum Handed {
    /// The run had no task still waiting on it.
    Nothing,
    /// A continuation run (queued, holding the checkout) carries on.
    Continued { run_id: String, attempt: i64 },
    /// The continuation budget is spent: the task is blocked.
    Blocked,
    /// The agent cannot run now (paused, terminated): the task goes back to
    /// `todo`, still assigned, for when it can.
    Released,
}

/// Ends a run lost with the previous server process and hands its task on,
/// in one transaction. `None` if the run was no longer running.
pub async fn finish_lost(
    store: &Store,
    run: &HeartbeatRun,
    finish: Finish,
    budget: i64,
) -> Result<Option<Handed>> {
    let mut tx = store.begin().await?;
    let Some(done) = crate::runs::finish::finish_in(&mut tx, &run.id, &finish).await? else {
        return Ok(None);
    };
    let handed = continue_in(&mut tx, &done, budget).await?;
    crate::runs::verdict::record_in(&mut tx, done).await?;
    tx.commit().await?;
    Ok(Some(handed))
}

async fn continue_in(tx: &mut Tx, run: &HeartbeatRun, budget: i64) -> Result<Handed> {
    let Some(issue) = waiting_task(tx, run).await? else {
        return Ok(Handed::Nothing);
    };
    let attempt = run.continuation_attempt + 1;
    if attempt > budget {
        let reason = format!(
            "Its work was interrupted by {attempt} control-plane restarts in a row; \
             automatic continuation stopped. Retry the last run or comment to continue."
        );
        block(tx, &issue, run, &reason).await?;
        return Ok(Handed::Blocked);
    }
    let woken = follow_up_wake(
        tx,
        &Actor::system(),
        run,
        Some(&issue.id),
        WakeSource::Assignment,
        "system",
        CONTINUE_REASON,
        json!({ "continuationOf": run.id, "continuationAttempt": attempt }),
    )
    .await?;
    let Some(next) = woken.run else {
        release_locks(tx, &issue.id, &run.id).await?;
        if issue.status == IssueStatus::InProgress {
            set_status(
                tx,
                &issue,
                IssueStatus::Todo,
                run,
                "Its agent cannot run now",
            )
            .await?;
        }
        return Ok(Handed::Released);
    };
    crate::engine::db::query(
        "UPDATE heartbeat_runs SET continuation_attempt = $2 WHERE id = $1 AND status = 'queued'",
    )
    .bind(&next.id)
    .bind(attempt)
    .execute(tx.conn())
    .await?;
    hand_checkout(tx, &issue.id, &run.id, &next.id).await?;
    activity::record(
        tx,
        &Actor::system(),
        Entry {
            company_id: &run.company_id,
            action: Action::HeartbeatContinued,
            entity_type: EntityType::HeartbeatRun,
            entity_id: &next.id,
            details: json!({
                "agentId": run.agent_id, "issueId": issue.id, "identifier": issue.identifier,
                "continuationOf": run.id, "continuationAttempt": attempt,
            }),
        },
    )
    .await?;
    Ok(Handed::Continued {
        run_id: next.id,
        attempt,
    })
}

/// Retry from the board: a new run of the failed run's agent on its task.
/// A task the failure
/// blocked goes back to `todo` so the agent can check it out again.
pub async fn retry(
    store: &Store,
    actor: &Actor,
    agent_id: &str,
    failed_run_id: &str,
) -> Result<Woken> {
    let mut tx = store.begin().await?;
    let failed = crate::runs::table::get_in(&mut tx, failed_run_id)
        .await
        .map_err(|e| match e {
            Error::NotFound(_) => Error::invalid("failedRunId", "No such run"),
            e => e,
        })?;
    if failed.agent_id != agent_id {
        return Err(Error::rule("The run to retry belongs to another agent"));
    }
    if !matches!(failed.status.as_str(), "failed" | "timed_out" | "cancelled") {
        return Err(Error::conflict(
            "Only a failed, timed-out or stopped run can be retried",
            Some(json!({ "runId": failed.id, "status": failed.status })),
        ));
    }
    let issue = match &failed.issue_id {
        Some(id) => crate::issues::table::load_in(&mut tx, id).await.ok(),
        None => None,
    };
    if let Some(issue) = issue.as_ref().filter(|i| {
        i.status == IssueStatus::Blocked && i.assignee_agent_id.as_deref() == Some(agent_id)
    }) {
        set_status(
            &mut tx,
            issue,
            IssueStatus::Todo,
            &failed,
            "Retried from the board",
        )
        .await?;
    }
    let woken = follow_up_wake(
        &mut tx,
        actor,
        &failed,
        failed.issue_id.as_deref(),
        WakeSource::OnDemand,
        "manual",
        RETRY_REASON,
        json!({ "failedRunId": failed.id }),
    )
    .await?;
    if let Some(next) = &woken.run {
        activity::record(
            &mut tx,
            actor,
            Entry {
                company_id: &failed.company_id,
                action: Action::HeartbeatRetried,
                entity_type: EntityType::HeartbeatRun,
                entity_id: &next.id,
                details: json!({ "agentId": agent_id, "issueId": failed.issue_id, "retryOfRunId": failed.id }),
            },
        )
        .await?;
    }
    tx.commit().await?;
    Ok(woken)
}

/// The task a lost run was working on, if it still waits for that agent:
/// held by the run, or open and assigned to its agent (the run may have died
/// before it checked the task out).
async fn waiting_task(tx: &mut Tx, run: &HeartbeatRun) -> Result<Option<Issue>> {
    if let Some(issue) = held_task(tx, run).await? {
        return Ok(Some(issue));
    }
    let Some(issue_id) = &run.issue_id else {
        return Ok(None);
    };
    let issue = match crate::issues::table::load_in(tx, issue_id).await {
        Ok(issue) => issue,
        Err(Error::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let open = matches!(issue.status.as_str(), "todo" | "in_progress");
    Ok(
        (open && issue.assignee_agent_id.as_deref() == Some(run.agent_id.as_str()))
            .then_some(issue),
    )
}
