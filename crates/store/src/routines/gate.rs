//! A routine's activity gate (upstream's `activityGatePolicy:
//! require_external_activity`): a scheduled tick fires only if something
//! happened in the company (or the routine's project) since the routine last
//! ran. A daily triage over a board nobody touched is skipped instead of
//! waking an agent to find nothing.
//!
//! What counts is any activity entry except the routine's own doing (the
//! scheduler's entries, its runs and execution tasks, and what the agent
//! runs on those tasks wrote) and run bookkeeping (`heartbeat.*`: a run's
//! queueing and end follow from some other change, which counts itself). The window starts when the routine last made a run that
//! was not itself skipped or coalesced; a routine that never ran fires.

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::routine::{ActivityGateScope, Routine, RoutineTrigger};
use serde_json::json;

use crate::engine::row::RowExt;
use crate::routines::table::{record, stamp};
use crate::{new_id, Result, Tx};

/// `Some(window start)` when the routine's gate finds nothing to act on.
pub(crate) async fn quiet(tx: &mut Tx, routine: &Routine) -> Result<Option<String>> {
    let last = crate::engine::db::query(
        "SELECT created_at FROM routine_runs WHERE routine_id = $1 \
         AND status NOT IN ('skipped', 'coalesced') ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(&routine.id)
    .fetch_optional(tx.conn())
    .await?;
    let Some(last) = last else {
        return Ok(None);
    };
    let since = last.text("created_at")?;
    let Ok(at) = DateTime::parse_from_rfc3339(&since) else {
        return Ok(None);
    };
    let project = match routine.activity_gate_scope {
        ActivityGateScope::Company => None,
        // A project scope without a project is refused when set; an older
        // row left so fails open (fires) rather than going quiet for ever.
        ActivityGateScope::Project => match &routine.project_id {
            Some(p) => Some(p.clone()),
            None => return Ok(None),
        },
    };
    // Entry ids are UUIDv7, ordered by their millisecond: the company's id
    // index finds the entries since the window's start without a scan of
    // its history.
    let bound = id_at(at.with_timezone(&Utc));
    let scoped = if project.is_some() {
        " AND ((a.entity_type = 'project' AND a.entity_id = $4) \
         OR EXISTS (SELECT 1 FROM issues i WHERE a.entity_type = 'issue' \
           AND CAST(i.id AS TEXT) = a.entity_id AND i.project_id = $5) \
         OR EXISTS (SELECT 1 FROM heartbeat_runs h JOIN issues i ON i.id = h.issue_id \
           WHERE h.id = a.run_id AND i.project_id = $5))"
    } else {
        ""
    };
    let sql = format!(
        "SELECT 1 FROM activity_log a WHERE a.company_id = $1 AND a.id > $2 \
         AND a.actor_id <> 'routine-scheduler' AND a.action NOT LIKE 'heartbeat.%' \
         AND NOT EXISTS (SELECT 1 FROM routine_runs r WHERE r.routine_id = $3 \
           AND ((a.entity_type = 'issue' AND CAST(r.linked_issue_id AS TEXT) = a.entity_id) \
             OR (a.entity_type = 'routine_run' AND CAST(r.id AS TEXT) = a.entity_id))) \
         AND NOT EXISTS (SELECT 1 FROM heartbeat_runs h \
           JOIN routine_runs r ON r.linked_issue_id = h.issue_id WHERE r.routine_id = $3 \
           AND (h.id = a.run_id OR (a.entity_type = 'heartbeat_run' \
             AND CAST(h.id AS TEXT) = a.entity_id))){scoped} LIMIT 1"
    );
    let mut q = crate::engine::db::query(&sql)
        .bind(&routine.company_id)
        .bind(&bound)
        .bind(&routine.id);
    if let Some(p) = &project {
        q = q.bind(p).bind(p);
    }
    let found = q.fetch_optional(tx.conn()).await?;
    Ok(found.is_none().then_some(since))
}

/// A quiet tick of a gated routine: claimed, and recorded as a skipped run
/// that says why, with no task and no wake.
pub(crate) async fn skip_in(
    tx: &mut Tx,
    actor: &Actor,
    routine: &Routine,
    trigger: &RoutineTrigger,
    tick: DateTime<Utc>,
    since: &str,
) -> Result<()> {
    let id = new_id();
    let ts = crate::now();
    crate::engine::db::query(
        "INSERT INTO routine_runs (id, company_id, routine_id, trigger_id, source, status, \
         triggered_at, routine_revision_id, failure_reason, completed_at, created_at, updated_at, \
         responsible_user_id) \
         VALUES ($1, $2, $3, $4, 'schedule', 'skipped', $5, $6, 'no_external_activity', $7, $7, $7, \
         $8)",
    )
    .bind(&id)
    .bind(&routine.company_id)
    .bind(&routine.id)
    .bind(&trigger.id)
    .bind(stamp(tick))
    .bind(routine.latest_revision_id.as_deref())
    .bind(&ts)
    .bind(routine.responsible_user_id.as_deref())
    .execute(tx.conn())
    .await?;
    record(
        tx,
        actor,
        &routine.company_id,
        Action::RoutineRunSkipped,
        EntityType::RoutineRun,
        &id,
        json!({ "routineId": routine.id, "triggerId": trigger.id, "source": "schedule",
            "status": "skipped", "reason": "no_external_activity",
            "activityGate": { "verdict": "quiet", "windowStart": since } }),
    )
    .await
}

/// The smallest UUIDv7 of the millisecond after `at`, as text: entries
/// made after `at` sort above it.
fn id_at(at: DateTime<Utc>) -> String {
    let ms = u64::try_from(at.timestamp_millis()).unwrap_or(0);
    format!(
        "{:08x}-{:04x}-0000-0000-000000000000",
        (ms >> 16) & 0xffff_ffff,
        ms & 0xffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_sorts_below_ids_made_after_it_and_above_those_before() {
        let at = DateTime::parse_from_rfc3339("2026-12-05T10:00:00.123Z")
            .unwrap()
            .with_timezone(&Utc);
        let bound = id_at(at);
        let made = |ms: i64| {
            let t = at + chrono::Duration::milliseconds(ms);
            let ts = uuid::Timestamp::from_unix(
                uuid::NoContext,
                t.timestamp() as u64,
                t.timestamp_subsec_nanos(),
            );
            uuid::Uuid::new_v7(ts).to_string()
        };
        assert!(made(0) > bound, "the same millisecond counts as after");
        assert!(made(1) > bound);
        assert!(made(-1) < bound);
    }
}
