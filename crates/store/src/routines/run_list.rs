//! A company's routines with their runs, for the board and the list
//! route: each routine's newest run and live task, read for the whole
//! company in a few queries whatever the number of routines.

use std::collections::HashMap;

use paperclip_core::routine::{RoutineListItem, RoutineRunSummary, TriggerListItem};

use crate::engine::row::RowExt;
use crate::routines::runs::{map_summary, SELECT};
use crate::{Result, Store};

/// Each routine's newest run in the company, in one query.
pub async fn latest_of_company(
    store: &Store,
    company_id: &str,
) -> Result<HashMap<String, RoutineRunSummary>> {
    let rows = crate::engine::db::query(&format!(
        "{SELECT} WHERE r.company_id = $1 AND r.id = (SELECT r2.id FROM routine_runs r2 \
         WHERE r2.routine_id = r.routine_id ORDER BY r2.created_at DESC, r2.id DESC LIMIT 1)"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|row| Ok((row.text("routine_id")?, map_summary(row)?)))
        .collect()
}

/// The board's list: each routine with its triggers, last run and the task
/// of its live execution, in four queries whatever the number of routines.
pub async fn list_items(
    store: &Store,
    company_id: &str,
    project_id: Option<&str>,
) -> Result<Vec<RoutineListItem>> {
    let mut triggers_of: HashMap<String, Vec<_>> = HashMap::new();
    for t in crate::routines::trigger_table::of_company(store, company_id).await? {
        triggers_of.entry(t.routine_id.clone()).or_default().push(t);
    }
    let mut latest = latest_of_company(store, company_id).await?;
    let mut active = crate::routines::table::active_issues_of_company(store, company_id).await?;
    let mut out = Vec::new();
    for routine in crate::routines::table::list(store, company_id, project_id).await? {
        let triggers = triggers_of
            .remove(&routine.id)
            .unwrap_or_default()
            .into_iter()
            .map(|t| TriggerListItem {
                id: t.id,
                kind: t.kind,
                label: t.label,
                enabled: t.enabled,
                cron_expression: t.cron_expression,
                timezone: t.timezone,
                next_run_at: t.next_run_at,
                last_fired_at: t.last_fired_at,
                last_result: t.last_result,
            })
            .collect();
        let last_run = latest.remove(&routine.id);
        let active_issue = active.remove(&routine.id);
        out.push(RoutineListItem {
            routine,
            managed_by_plugin: None,
            triggers,
            last_run,
            active_issue,
        });
    }
    Ok(out)
}
