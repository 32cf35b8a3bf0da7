//! A routine's runs: dispatching one (the run row, the concurrency check,
//! the task and its assignee's wake in one transaction), claiming due
//! schedule ticks so that two servers on one database fire a tick once, and
//! reading runs back with the task they made.
//!
//! A run that made a task follows it when read: the task done makes the run
//! `completed`, blocked or cancelled `failed`, reopened `issue_created`
//! again (`RoutineRunStatus::following`). Deriving it on read keeps every
//! path that changes a task's status (the board, agents, a run's end)
//! correct without each one knowing about routines.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::cron::interpolate;
use paperclip_core::input::NewIssue;
use paperclip_core::issue::IssueStatus;
use paperclip_core::routine::{
    ActivityGatePolicy, CatchUpPolicy, ConcurrencyPolicy, LinkedIssue, Routine, RoutineRun,
    RoutineRunStatus, RoutineRunSummary, RoutineStatus, RoutineTrigger, RunSource, TriggerRef,
};
use paperclip_core::routine_dispatch;
use serde_json::{json, Map, Value};

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::routines::table::{record, stamp};
use crate::{new_id, Backend, Error, Result, Store, Tx};

/// One execution to dispatch.
pub struct Dispatch<'a> {
    pub routine_id: &'a str,
    pub trigger: Option<&'a RoutineTrigger>,
    pub source: RunSource,
    pub triggered_at: DateTime<Utc>,
    pub payload: Option<Value>,
    pub variables: Map<String, Value>,
    pub idempotency_key: Option<&'a str>,
    pub assignee_agent_id: Option<&'a str>,
}

pub async fn dispatch(store: &Store, actor: &Actor, d: Dispatch<'_>) -> Result<RoutineRun> {
    let mut tx = store.begin().await?;
    let run = dispatch_in(&mut tx, store.backend(), actor, &d).await?;
    tx.commit().await?;
    Ok(run)
}

async fn dispatch_in(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    d: &Dispatch<'_>,
) -> Result<RoutineRun> {
    let trigger_id = d.trigger.map(|t| t.id.as_str());
    if let Some(key) = d.idempotency_key {
        let row = crate::engine::db::query(&format!(
            "{SELECT} WHERE r.routine_id = $1 AND r.idempotency_key = $2 AND r.source = $3 \
             AND ((r.trigger_id IS NULL AND $4 IS NULL) OR CAST(r.trigger_id AS TEXT) = $4)"
        ))
        .bind(d.routine_id)
        .bind(key)
        .bind(d.source.as_str())
        .bind(trigger_id)
        .fetch_optional(tx.conn())
        .await?;
        if let Some(row) = row {
            return Ok(map_summary(&row)?.run);
        }
    }
    // The routine's row lock, held to the commit: concurrent dispatches of
    // one routine see each other's executions in the concurrency check.
    let now = crate::now();
    let row = crate::engine::db::query(&format!(
        "UPDATE routines SET last_triggered_at = $2 WHERE id = $1 RETURNING {}",
        crate::routines::table::READ_COLUMNS
    ))
    .bind(d.routine_id)
    .bind(&now)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Routine"))?;
    let routine = crate::routines::table::map(&row)?;
    if routine.status == RoutineStatus::Archived {
        return Err(Error::conflict("Routine is archived", None));
    }
    if routine.status != RoutineStatus::Active
        && matches!(d.source, RunSource::Schedule | RunSource::Webhook)
    {
        return Err(Error::conflict("Routine is not active", None));
    }
    let assignee = d
        .assignee_agent_id
        .map(str::to_string)
        .or_else(|| routine.assignee_agent_id.clone())
        .ok_or_else(|| Error::rule("Default agent required"))?;
    let values = resolve_variables(&routine, &d.variables, d.payload.as_ref())?;
    let title = interpolate(&routine.title, &values, d.triggered_at);
    let description = routine
        .description
        .as_deref()
        .map(|t| interpolate(t, &values, d.triggered_at));
    // An optional variable left empty is not one the run was given.
    let given: BTreeMap<String, String> = values
        .iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let fingerprint = routine_dispatch::fingerprint(&routine_dispatch::Dispatched {
        payload: d.payload.as_ref(),
        variables: &given,
        project_id: routine.project_id.as_deref(),
        assignee_agent_id: &assignee,
        routine_revision_id: routine.latest_revision_id.as_deref(),
        env: routine.env.as_ref(),
        title: &title,
        description: description.as_deref(),
    });
    let responsible = responsible_for_run(tx, &routine, actor, d.source).await?;
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO routine_runs (id, company_id, routine_id, trigger_id, source, status, \
         triggered_at, routine_revision_id, idempotency_key, trigger_payload, linked_issue_id, \
         coalesced_into_run_id, failure_reason, completed_at, created_at, updated_at, \
         responsible_user_id, dispatch_fingerprint) \
         VALUES ($1, $2, $3, $4, $5, 'received', $6, $7, $8, $9, NULL, NULL, NULL, NULL, $10, $10, \
         $11, $12)",
    )
    .bind(&id)
    .bind(&routine.company_id)
    .bind(&routine.id)
    .bind(trigger_id)
    .bind(d.source.as_str())
    .bind(stamp(d.triggered_at))
    .bind(routine.latest_revision_id.as_deref())
    .bind(d.idempotency_key)
    .bind(d.payload.as_ref().map(Value::to_string))
    .bind(&now)
    .bind(responsible.as_deref())
    .bind(&fingerprint)
    .execute(tx.conn())
    .await?;
    let live = match routine.concurrency_policy {
        ConcurrencyPolicy::AlwaysEnqueue => None,
        _ => live_execution(tx, &routine.id, &id, &fingerprint).await?,
    };
    let (status, action) = if let Some((run_id, issue_id)) = live {
        let status = match routine.concurrency_policy {
            ConcurrencyPolicy::SkipIfActive => RoutineRunStatus::Skipped,
            _ => RoutineRunStatus::Coalesced,
        };
        crate::engine::db::query(
            "UPDATE routine_runs SET status = $2, linked_issue_id = $3, \
             coalesced_into_run_id = $4, completed_at = $5, updated_at = $5 WHERE id = $1",
        )
        .bind(&id)
        .bind(status.as_str())
        .bind(&issue_id)
        .bind(&run_id)
        .bind(&now)
        .execute(tx.conn())
        .await?;
        let action = match status {
            RoutineRunStatus::Skipped => Action::RoutineRunSkipped,
            _ => Action::RoutineRunTriggered,
        };
        (status, action)
    } else {
        let input = NewIssue {
            title,
            description,
            status: Some(IssueStatus::Todo),
            priority: Some(routine.priority),
            project_id: routine.project_id.clone(),
            goal_id: routine.goal_id.clone(),
            parent_id: routine.parent_issue_id.clone(),
            assignee_agent_id: Some(assignee.clone()),
            assignee_user_id: None,
            billing_code: None,
            label_ids: None,
            blocked_by_issue_ids: None,
        };
        // A routine's task sits where the person configured it, at any depth.
        let issue = crate::issues::create::create_in_placed(
            tx,
            backend,
            actor,
            &routine.company_id,
            &input,
            true,
            false,
        )
        .await?;
        // The task is done for the run's responsible person (the original
        // trusts the routine's choice over the task's own inference).
        crate::engine::db::query(
            "UPDATE issues SET origin_kind = 'routine_execution', \
             responsible_user_id = COALESCE($2, responsible_user_id) WHERE id = $1",
        )
        .bind(&issue.id)
        .bind(responsible.as_deref())
        .execute(tx.conn())
        .await?;
        crate::engine::db::query(
            "UPDATE routine_runs SET status = 'issue_created', linked_issue_id = $2, \
             updated_at = $3 WHERE id = $1",
        )
        .bind(&id)
        .bind(&issue.id)
        .bind(&now)
        .execute(tx.conn())
        .await?;
        crate::engine::db::query("UPDATE routines SET last_enqueued_at = $2 WHERE id = $1")
            .bind(&routine.id)
            .bind(&now)
            .execute(tx.conn())
            .await?;
        (RoutineRunStatus::IssueCreated, Action::RoutineRunTriggered)
    };
    let run = get_in(tx, &id).await?;
    record(
        tx,
        actor,
        &routine.company_id,
        action,
        EntityType::RoutineRun,
        &id,
        json!({ "routineId": routine.id, "triggerId": trigger_id, "source": d.source,
            "status": status, "linkedIssueId": run.linked_issue_id }),
    )
    .await?;
    Ok(run)
}

/// Who a run is done for (the original's order): the person who started
/// it by hand, else the responsible person of the revision it runs, else
/// the routine's.
async fn responsible_for_run(
    tx: &mut Tx,
    routine: &Routine,
    actor: &Actor,
    source: RunSource,
) -> Result<Option<String>> {
    if let (RunSource::Manual, Some(user)) = (source, actor.user_id()) {
        return Ok(Some(user.to_string()));
    }
    if let Some(revision) = &routine.latest_revision_id {
        let row = crate::engine::db::query(
            "SELECT responsible_user_id FROM routine_revisions WHERE id = $1",
        )
        .bind(revision)
        .fetch_optional(tx.conn())
        .await?;
        if let Some(user) = row
            .map(|r| r.opt_text("responsible_user_id"))
            .transpose()?
            .flatten()
        {
            return Ok(Some(user));
        }
    }
    Ok(routine.responsible_user_id.clone())
}

/// The newest execution of the routine that was dispatched with the same
/// fingerprint, whose task is open and whose assignee has a run queued or
/// running: (its routine run, its task). A run from before fingerprints
/// (none kept) matches any, so a live execution of an upgraded server
/// still coalesces, as the original's `default` arm does.
async fn live_execution(
    tx: &mut Tx,
    routine_id: &str,
    except: &str,
    fingerprint: &str,
) -> Result<Option<(String, String)>> {
    let row = crate::engine::db::query(
        "SELECT r.id, i.id AS issue_id FROM routine_runs r \
         JOIN issues i ON i.id = r.linked_issue_id \
         WHERE r.routine_id = $1 AND r.id <> $2 AND r.status = 'issue_created' \
         AND (r.dispatch_fingerprint = $3 OR r.dispatch_fingerprint IS NULL) \
         AND i.status IN ('backlog', 'todo', 'in_progress', 'in_review', 'blocked') \
         AND EXISTS (SELECT 1 FROM heartbeat_runs h WHERE h.agent_id = i.assignee_agent_id \
         AND h.status IN ('queued', 'running')) \
         ORDER BY r.created_at DESC, r.id DESC LIMIT 1",
    )
    .bind(routine_id)
    .bind(except)
    .bind(fingerprint)
    .fetch_optional(tx.conn())
    .await?;
    row.map(|r| Ok((r.text("id")?, r.text("issue_id")?)))
        .transpose()
}

/// The request's variables, then a webhook's `body.variables`, then the
/// payload's top-level keys, then the default; each is checked against its
/// declared type (422 when it does not read as one), and a required one
/// left empty is refused.
fn resolve_variables(
    routine: &Routine,
    given: &Map<String, Value>,
    payload: Option<&Value>,
) -> Result<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    for v in &routine.variables {
        let found = given
            .get(&v.name)
            .or_else(|| payload.and_then(|p| p.get("body")?.get("variables")?.get(&v.name)))
            .or_else(|| payload.and_then(|p| p.get(&v.name)))
            .or(v.default_value.as_ref());
        let value = match found {
            Some(raw) => v.normalize(raw).map_err(Error::rule)?,
            None => None,
        };
        match value {
            Some(s) => {
                values.insert(v.name.clone(), s);
            }
            None if v.required => {
                return Err(Error::rule(format!(
                    "Missing required variable '{}'",
                    v.name
                )))
            }
            None => {
                values.insert(v.name.clone(), String::new());
            }
        }
    }
    Ok(values)
}

/// An enabled schedule of an active routine whose tick is due.
pub struct Due {
    pub trigger: RoutineTrigger,
    pub catch_up_policy: CatchUpPolicy,
}

pub async fn due(store: &Store, now: DateTime<Utc>) -> Result<Vec<Due>> {
    let columns = crate::routines::trigger_table::COLUMNS
        .split(", ")
        .map(|c| format!("t.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let rows = crate::engine::db::query(&format!(
        "SELECT {columns}, r.catch_up_policy FROM routine_triggers t \
         JOIN routines r ON r.id = t.routine_id WHERE t.kind = 'schedule' AND t.enabled = $2 \
         AND r.status = 'active' AND t.next_run_at <= $1 ORDER BY t.next_run_at LIMIT 200"
    ))
    .bind(stamp(now))
    .bind(true)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Due {
                trigger: crate::routines::trigger_table::map(row)?,
                catch_up_policy: row.stored("catch_up_policy")?,
            })
        })
        .collect()
}

/// Claims the tick the trigger was due at and dispatches `ticks` in one
/// transaction. The claim is a compare-and-set on `next_run_at`: a server
/// that read the same due tick finds it moved (on Postgres its update waits
/// for the first one's commit, then matches nothing) and dispatches
/// nothing. `Ok(None)`: someone else claimed it.
pub async fn fire(
    store: &Store,
    actor: &Actor,
    trigger: &RoutineTrigger,
    ticks: &[DateTime<Utc>],
    next: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Option<Vec<RoutineRun>>> {
    let mut tx = store.begin().await?;
    if !claim(&mut tx, trigger, next).await? {
        return Ok(None);
    }
    let routine = crate::routines::table::get_in(&mut tx, &trigger.routine_id).await?;
    if routine.activity_gate_policy == ActivityGatePolicy::RequireExternalActivity {
        if let Some(since) = crate::routines::gate::quiet(&mut tx, &routine).await? {
            let tick = ticks.last().copied().unwrap_or(now);
            crate::routines::gate::skip_in(&mut tx, actor, &routine, trigger, tick, &since).await?;
            mark_fired(&mut tx, &trigger.id, now, "skipped").await?;
            tx.commit().await?;
            return Ok(Some(Vec::new()));
        }
    }
    let mut runs = Vec::new();
    for tick in ticks {
        let d = Dispatch {
            routine_id: &trigger.routine_id,
            trigger: Some(trigger),
            source: RunSource::Schedule,
            triggered_at: *tick,
            payload: None,
            variables: Map::new(),
            idempotency_key: None,
            assignee_agent_id: None,
        };
        runs.push(dispatch_in(&mut tx, store.backend(), actor, &d).await?);
    }
    let result = runs.last().map(|r| r.status.as_str()).unwrap_or("skipped");
    mark_fired(&mut tx, &trigger.id, now, result).await?;
    tx.commit().await?;
    Ok(Some(runs))
}

/// A tick whose dispatch failed: the tick is claimed all the same (a
/// failing routine must not fire every pass) and a `failed` run says why.
pub async fn fire_failed(
    store: &Store,
    trigger: &RoutineTrigger,
    tick: DateTime<Utc>,
    next: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    reason: &str,
) -> Result<bool> {
    let mut tx = store.begin().await?;
    if !claim(&mut tx, trigger, next).await? {
        return Ok(false);
    }
    let ts = crate::now();
    crate::engine::db::query(
        "INSERT INTO routine_runs (id, company_id, routine_id, trigger_id, source, status, \
         triggered_at, failure_reason, completed_at, created_at, updated_at, responsible_user_id) \
         VALUES ($1, $2, $3, $4, 'schedule', 'failed', $5, $6, $7, $7, $7, \
         (SELECT responsible_user_id FROM routines WHERE id = $3))",
    )
    .bind(new_id())
    .bind(&trigger.company_id)
    .bind(&trigger.routine_id)
    .bind(&trigger.id)
    .bind(stamp(tick))
    .bind(reason)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    mark_fired(&mut tx, &trigger.id, now, "failed").await?;
    tx.commit().await?;
    Ok(true)
}

async fn claim(tx: &mut Tx, trigger: &RoutineTrigger, next: Option<DateTime<Utc>>) -> Result<bool> {
    let Some(due) = &trigger.next_run_at else {
        return Ok(false);
    };
    let claimed = crate::engine::db::query(
        "UPDATE routine_triggers SET next_run_at = $3 WHERE id = $1 AND next_run_at = $2 \
         AND enabled = $4 RETURNING id",
    )
    .bind(&trigger.id)
    .bind(due.as_str())
    .bind(next.map(stamp))
    .bind(true)
    .fetch_optional(tx.conn())
    .await?;
    Ok(claimed.is_some())
}

pub async fn mark_trigger(
    store: &Store,
    trigger_id: &str,
    now: DateTime<Utc>,
    result: &str,
) -> Result<()> {
    let mut tx = store.begin().await?;
    mark_fired(&mut tx, trigger_id, now, result).await?;
    tx.commit().await
}

async fn mark_fired(tx: &mut Tx, trigger_id: &str, now: DateTime<Utc>, result: &str) -> Result<()> {
    crate::engine::db::query(
        "UPDATE routine_triggers SET last_fired_at = $2, last_result = $3 WHERE id = $1",
    )
    .bind(trigger_id)
    .bind(stamp(now))
    .bind(result)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub(crate) const SELECT: &str = "SELECT r.id, r.company_id, r.routine_id, r.trigger_id, r.source, \
     r.status, r.triggered_at, r.routine_revision_id, r.idempotency_key, r.trigger_payload, \
     r.responsible_user_id, r.dispatch_fingerprint, \
     r.linked_issue_id, r.coalesced_into_run_id, r.failure_reason, r.completed_at, r.created_at, \
     r.updated_at, i.identifier AS issue_identifier, i.title AS issue_title, \
     i.status AS issue_status, i.priority AS issue_priority, i.updated_at AS issue_updated_at, \
     t.kind AS trigger_kind, t.label AS trigger_label \
     FROM routine_runs r LEFT JOIN issues i ON i.id = r.linked_issue_id \
     LEFT JOIN routine_triggers t ON t.id = r.trigger_id";

async fn get_in(tx: &mut Tx, id: &str) -> Result<RoutineRun> {
    let row = crate::engine::db::query(&format!("{SELECT} WHERE r.id = $1"))
        .bind(id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("Routine run"))?;
    Ok(map_summary(&row)?.run)
}

/// Newest first; `limit` clamped to 1..=200.
pub async fn list(store: &Store, routine_id: &str, limit: i64) -> Result<Vec<RoutineRunSummary>> {
    let rows = crate::engine::db::query(&format!(
        "{SELECT} WHERE r.routine_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT $2"
    ))
    .bind(routine_id)
    .bind(limit.clamp(1, 200))
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_summary).collect()
}

pub(crate) fn map_summary(row: &DbRow) -> Result<RoutineRunSummary> {
    let stored: RoutineRunStatus = row.stored("status")?;
    let issue_status: Option<IssueStatus> = row.opt_stored("issue_status")?;
    let status = issue_status.map_or(stored, |s| stored.following(s));
    let linked_issue = match (row.opt_text("linked_issue_id")?, issue_status) {
        (Some(id), Some(status)) => Some(LinkedIssue {
            id,
            identifier: row.text("issue_identifier")?,
            title: row.text("issue_title")?,
            status,
            priority: row.stored("issue_priority")?,
            updated_at: row.text("issue_updated_at")?,
        }),
        _ => None,
    };
    let completed_at = match (status, &linked_issue) {
        (RoutineRunStatus::Completed | RoutineRunStatus::Failed, Some(i))
            if stored == RoutineRunStatus::IssueCreated =>
        {
            Some(i.updated_at.clone())
        }
        (RoutineRunStatus::IssueCreated, _) => None,
        _ => row.opt_text("completed_at")?,
    };
    let trigger = match (row.opt_text("trigger_id")?, row.opt_stored("trigger_kind")?) {
        (Some(id), Some(kind)) => Some(TriggerRef {
            id,
            kind,
            label: row.opt_text("trigger_label")?,
        }),
        _ => None,
    };
    Ok(RoutineRunSummary {
        run: RoutineRun {
            id: row.text("id")?,
            company_id: row.text("company_id")?,
            routine_id: row.text("routine_id")?,
            trigger_id: row.opt_text("trigger_id")?,
            source: row.stored("source")?,
            status,
            triggered_at: row.text("triggered_at")?,
            routine_revision_id: row.opt_text("routine_revision_id")?,
            responsible_user_id: row.opt_text("responsible_user_id")?,
            idempotency_key: row.opt_text("idempotency_key")?,
            trigger_payload: row.opt_json("trigger_payload")?,
            dispatch_fingerprint: row.opt_text("dispatch_fingerprint")?,
            linked_issue_id: row.opt_text("linked_issue_id")?,
            coalesced_into_run_id: row.opt_text("coalesced_into_run_id")?,
            failure_reason: row.opt_text("failure_reason")?,
            completed_at,
            created_at: row.text("created_at")?,
            updated_at: row.text("updated_at")?,
        },
        linked_issue,
        trigger,
    })
}
