//! A task's monitor (upstream's `executionPolicy.monitor`): scheduled by a
//! PATCH (or a create), answered on the issue row, fired once when due by
//! the runtime's tick or at once by `monitor/check-now`, each firing a wake
//! of the assignee agent with `issue_monitor_due` in the same transaction
//! as the row's update, so two instances fire it once.

use chrono::{DateTime, Utc};
use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use paperclip_core::monitor::{
    self, clear_reason_for, eligible, execution_policy, execution_state, iso, ClearReason,
    MonitorPolicy, MonitorStatus, WAKE_REASON,
};
use serde_json::{json, Value};

use crate::audit::activity;
use crate::engine::row::RowExt;
use crate::issues::table::load_in;
use crate::wakes::{enqueue_in, Wake};
use crate::{now, Error, Result, Store, Tx};

const INVALID: &str =
    "Monitor can only be scheduled on issues assigned to an agent in in_progress or in_review";
const EXHAUSTED: &str = "Monitor bounds are already exhausted";

/// The monitor of an `executionPolicy` a client sent: `None` when the
/// policy carries none (or is `null`), else the checked policy.
pub fn parse_policy(value: &Value) -> Result<Option<MonitorPolicy>> {
    let monitor = match value {
        Value::Null => return Ok(None),
        Value::Object(map) => match map.get("monitor") {
            None | Some(Value::Null) => return Ok(None),
            Some(m) => m.clone(),
        },
        _ => return Err(Error::invalid("executionPolicy", "Expected an object")),
    };
    let policy: MonitorPolicy = serde_json::from_value(monitor).map_err(|e| Error::Invalid {
        message: e.to_string(),
        path: vec!["executionPolicy".into(), "monitor".into()],
    })?;
    policy.validated().map(Some).map_err(|e| Error::Invalid {
        message: e.message,
        path: vec!["executionPolicy".into(), "monitor".into(), e.field.into()],
    })
}

async fn schedule(tx: &mut Tx, actor: &Actor, issue: &Issue, policy: &MonitorPolicy) -> Result<()> {
    if !eligible(
        issue.status,
        issue.assignee_agent_id.as_deref(),
        issue.assignee_user_id.as_deref(),
    ) {
        return Err(Error::rule(INVALID));
    }
    if let Some(reason) =
        monitor::exhausted_at_schedule(policy, issue.monitor_attempt_count, Utc::now())
    {
        return Err(Error::Rule(format!("{EXHAUSTED} ({})", reason.as_str())));
    }
    let state = execution_state(
        MonitorStatus::Scheduled,
        policy,
        issue.monitor_attempt_count,
        issue.monitor_last_triggered_at.as_deref(),
        None,
    );
    crate::engine::db::query(
        "UPDATE issues SET execution_policy = $2, execution_state = $3, monitor_next_check_at = $4, \
         monitor_wake_requested_at = NULL, monitor_notes = $5, monitor_scheduled_by = $6, \
         monitor_external_ref = $7, updated_at = $8 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(execution_policy(policy).to_string())
    .bind(state.to_string())
    .bind(&policy.next_check_at)
    .bind(policy.notes.as_deref())
    .bind(policy.scheduled_by.map(|s| s.as_str()))
    .bind(policy.external_ref.as_deref())
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::on_issue(
        tx,
        actor,
        issue,
        Action::IssueMonitorScheduled,
        json!({
            "nextCheckAt": policy.next_check_at, "notes": policy.notes,
            "serviceName": policy.service_name, "maxAttempts": policy.max_attempts,
            "timeoutAt": policy.timeout_at,
        }),
    )
    .await
}

/// The stored policy of a task's scheduled monitor.
async fn stored(tx: &mut Tx, issue: &Issue) -> Result<Option<MonitorPolicy>> {
    if issue.monitor_next_check_at.is_none() {
        return Ok(None);
    }
    let external: Option<String> =
        crate::engine::db::query("SELECT monitor_external_ref FROM issues WHERE id = $1")
            .bind(&issue.id)
            .fetch_one(tx.conn())
            .await?
            .opt_text(0)?;
    Ok(issue
        .execution_policy
        .as_ref()
        .and_then(|p| monitor::stored_policy(p, external)))
}

async fn clear(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    policy: &MonitorPolicy,
    reason: ClearReason,
    action: Action,
) -> Result<()> {
    let ts = now();
    let state = execution_state(
        MonitorStatus::Cleared,
        policy,
        issue.monitor_attempt_count,
        issue.monitor_last_triggered_at.as_deref(),
        Some((reason, &ts)),
    );
    crate::engine::db::query(
        "UPDATE issues SET execution_policy = NULL, execution_state = $2, monitor_next_check_at = NULL, \
         monitor_wake_requested_at = NULL, monitor_external_ref = NULL, updated_at = $3 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(state.to_string())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::on_issue(
        tx,
        actor,
        issue,
        action,
        json!({
            "clearReason": reason.as_str(), "attemptCount": issue.monitor_attempt_count,
        }),
    )
    .await
}

/// After a PATCH: schedules what it sent (`Some(Some)`), clears on `null`,
/// and clears a monitor the task can no longer keep (done, cancelled,
/// reassigned to a person, out of progress), as upstream does.
pub(crate) async fn after_update(
    tx: &mut Tx,
    actor: &Actor,
    edited: &Issue,
    sent: Option<Option<Value>>,
) -> Result<()> {
    // Most edits touch no monitor: no statement for them.
    if sent.is_none() && edited.monitor_next_check_at.is_none() {
        return Ok(());
    }
    let id = edited.id.as_str();
    let issue = load_in(tx, id).await?;
    let requested = match &sent {
        Some(Some(value)) => parse_policy(value)?,
        _ => None,
    };
    if let Some(policy) = requested {
        return schedule(tx, actor, &issue, &policy).await;
    }
    let Some(policy) = stored(tx, &issue).await? else {
        return Ok(());
    };
    if sent.is_some() {
        return clear(
            tx,
            actor,
            &issue,
            &policy,
            ClearReason::Manual,
            Action::IssueMonitorCleared,
        )
        .await;
    }
    match clear_reason_for(
        issue.status,
        issue.assignee_agent_id.as_deref(),
        issue.assignee_user_id.as_deref(),
    ) {
        Some(reason) => {
            clear(
                tx,
                actor,
                &issue,
                &policy,
                reason,
                Action::IssueMonitorCleared,
            )
            .await
        }
        None => Ok(()),
    }
}

/// What a firing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fired {
    /// The assignee was woken.
    Triggered,
    /// The deadline or the attempts ran out: the monitor ended instead.
    Exhausted(ClearReason),
}

/// Fires a task's monitor now (`manual`: `monitor/check-now`, due or not)
/// or when due (the tick). 409 when the task cannot fire one, as upstream.
pub async fn fire(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    at: DateTime<Utc>,
    manual: bool,
) -> Result<Fired> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, issue_id).await?;
    let issue = load_in(&mut tx, issue_id).await?;
    let Some(policy) = stored(&mut tx, &issue).await? else {
        return Err(Error::conflict("Issue has no scheduled monitor", None));
    };
    let Some(agent) = issue
        .assignee_agent_id
        .clone()
        .filter(|_| issue.assignee_user_id.is_none())
    else {
        return Err(Error::conflict(
            "Issue monitor requires an agent assignee",
            None,
        ));
    };
    if !matches!(
        issue.status,
        IssueStatus::InProgress | IssueStatus::InReview
    ) {
        return Err(Error::conflict(
            "Issue monitor can only run while the issue is in progress or in review",
            None,
        ));
    }
    let ts = iso(at);
    let stale = iso(at - chrono::Duration::seconds(monitor::STALE_CLAIM_SECS));
    // The claim: one conditional update, so a second instance's tick (or a
    // second check-now) finds nothing to fire.
    let claimed = crate::engine::db::query(
        "UPDATE issues SET monitor_wake_requested_at = $2 WHERE id = $1 \
         AND monitor_next_check_at IS NOT NULL AND ($4 OR monitor_next_check_at <= $2) \
         AND (monitor_wake_requested_at IS NULL OR monitor_wake_requested_at < $3)",
    )
    .bind(&issue.id)
    .bind(&ts)
    .bind(&stale)
    .bind(manual)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if claimed == 0 {
        return Err(Error::conflict(
            "Issue monitor check is already in progress",
            None,
        ));
    }
    let attempt = issue.monitor_attempt_count + 1;
    if let Some(reason) = monitor::limit_at_trigger(&policy, attempt, at) {
        clear(
            &mut tx,
            actor,
            &issue,
            &policy,
            reason,
            Action::IssueMonitorExhausted,
        )
        .await?;
        tx.commit().await?;
        return Ok(Fired::Exhausted(reason));
    }
    let scheduled = policy.next_check_at.clone();
    let details = json!({
        "issueId": issue.id, "nextCheckAt": scheduled, "monitorAttemptCount": attempt,
        "monitorNotes": policy.notes, "serviceName": policy.service_name,
        "timeoutAt": policy.timeout_at, "maxAttempts": policy.max_attempts,
        "recoveryPolicy": policy.recovery_policy.map(|p| p.as_str()),
        "source": if manual { "manual" } else { "scheduled" },
    });
    enqueue_in(
        &mut tx,
        actor,
        Wake {
            agent_id: agent,
            source: if manual {
                WakeSource::OnDemand
            } else {
                WakeSource::Automation
            },
            trigger_detail: Some(if manual { "manual" } else { "system" }.into()),
            reason: Some(WAKE_REASON.into()),
            payload: Some(details.clone()),
            issue_id: Some(issue.id.clone()),
            idempotency_key: Some(format!("issue-monitor:{}:{scheduled}", issue.id)),
        },
    )
    .await?;
    let state = execution_state(MonitorStatus::Triggered, &policy, attempt, Some(&ts), None);
    crate::engine::db::query(
        "UPDATE issues SET execution_policy = NULL, execution_state = $2, monitor_next_check_at = NULL, \
         monitor_wake_requested_at = NULL, monitor_last_triggered_at = $3, monitor_attempt_count = $4, \
         updated_at = $3 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(state.to_string())
    .bind(&ts)
    .bind(attempt)
    .execute(tx.conn())
    .await?;
    activity::on_issue(
        &mut tx,
        actor,
        &issue,
        Action::IssueMonitorTriggered,
        json!({
            "nextCheckAt": scheduled, "lastTriggeredAt": ts, "attemptCount": attempt,
            "notes": policy.notes, "source": details["source"],
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(Fired::Triggered)
}

/// Tasks whose monitor is due at `at` and may fire (oldest due first, at
/// most 50 a pass), in active companies.
pub async fn due(store: &Store, at: DateTime<Utc>) -> Result<Vec<String>> {
    let ts = iso(at);
    let stale = iso(at - chrono::Duration::seconds(monitor::STALE_CLAIM_SECS));
    let rows = crate::engine::db::query(
        "SELECT i.id FROM issues i JOIN companies c ON c.id = i.company_id \
         WHERE i.monitor_next_check_at IS NOT NULL AND i.monitor_next_check_at <= $1 \
         AND i.assignee_user_id IS NULL AND i.assignee_agent_id IS NOT NULL \
         AND i.status IN ('in_progress', 'in_review') AND c.status = 'active' \
         AND (i.monitor_wake_requested_at IS NULL OR i.monitor_wake_requested_at < $2) \
         ORDER BY i.monitor_next_check_at, i.updated_at LIMIT 50",
    )
    .bind(&ts)
    .bind(&stale)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(|r| Ok(r.text(0)?)).collect()
}
