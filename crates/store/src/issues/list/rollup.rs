//! What upstream's task list adds to each task and a single task's answer
//! does not: `activeRun` (the run holding the task's execution lock, while it
//! is queued or running), `lastActivityAt` (the later of the task's last
//! update and its last comment) and `descriptionTruncated` (never here: the
//! list sends descriptions whole, within its page's text budget).
//!
//! Both of the list's paths read them the same way: `lastActivityAt` by
//! [`LAST_ACTIVITY`] (one index probe a task), the runs in one query a page.

use std::collections::HashMap;

use paperclip_core::model::Issue;
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::db::Conn;
use crate::engine::row::RowExt;
use crate::engine::sql::{json_array, json_values, ListOf};
use crate::Result;

/// A task's last activity, as a column of a statement over `issues`.
pub(crate) const LAST_ACTIVITY: &str = "COALESCE((SELECT MAX(c.created_at) FROM issue_comments c \
     WHERE c.issue_id = issues.id AND c.created_at > issues.updated_at), issues.updated_at)";

/// A task as the list answers it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listed<'a> {
    #[serde(flatten)]
    pub issue: &'a Issue,
    pub active_run: Option<&'a Value>,
    pub last_activity_at: &'a str,
    pub description_truncated: bool,
}

/// What follows a task's own keys in the list when no run holds it.
pub(crate) fn write_idle(out: &mut Vec<u8>, last_activity_at: &str) -> serde_json::Result<()> {
    out.extend_from_slice(br#","activeRun":null,"lastActivityAt":"#);
    serde_json::to_writer(&mut *out, last_activity_at)?;
    out.extend_from_slice(br#","descriptionTruncated":false}"#);
    Ok(())
}

/// The queued or running runs among `issues`' execution runs, by id.
pub(crate) async fn active_runs<'a>(
    conn: &mut Conn,
    issues: impl Iterator<Item = &'a Issue>,
) -> Result<HashMap<String, Value>> {
    let ids: Vec<&str> = issues
        .filter_map(|i| i.execution_run_id.as_deref())
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "SELECT id, status, agent_id, invocation_source, trigger_detail, started_at, finished_at, \
         created_at FROM heartbeat_runs WHERE id IN {} AND status IN ('queued', 'running')",
        json_values(conn.backend(), "$1", ListOf::Ids)
    );
    let rows = crate::engine::db::query(&sql)
        .bind(json_array(ids.into_iter()))
        .fetch_all(&mut *conn)
        .await?;
    let mut runs = HashMap::with_capacity(rows.len());
    for row in rows {
        let id = row.text(0)?;
        let run = json!({
            "id": id,
            "status": row.text(1)?,
            "agentId": row.text(2)?,
            "invocationSource": row.text(3)?,
            "triggerDetail": row.opt_text(4)?,
            "startedAt": row.opt_text(5)?,
            "finishedAt": row.opt_text(6)?,
            "createdAt": row.text(7)?,
        });
        runs.insert(id, run);
    }
    Ok(runs)
}

/// `issues` as the list answers them (the typed path).
pub(crate) async fn to_json(conn: &mut Conn, issues: &[Issue]) -> Result<Vec<u8>> {
    let mut last: HashMap<String, String> = HashMap::new();
    if !issues.is_empty() {
        let sql = format!(
            "SELECT id, {LAST_ACTIVITY} FROM issues WHERE id IN {}",
            json_values(conn.backend(), "$1", ListOf::Ids)
        );
        let rows = crate::engine::db::query(&sql)
            .bind(json_array(issues.iter().map(|i| i.id.as_str())))
            .fetch_all(&mut *conn)
            .await?;
        for row in rows {
            last.insert(row.text(0)?, row.text(1)?);
        }
    }
    let runs = active_runs(conn, issues.iter()).await?;
    let listed: Vec<Listed<'_>> = issues
        .iter()
        .map(|issue| Listed {
            issue,
            active_run: issue.execution_run_id.as_ref().and_then(|id| runs.get(id)),
            last_activity_at: last.get(&issue.id).unwrap_or(&issue.updated_at),
            description_truncated: false,
        })
        .collect();
    serde_json::to_vec(&listed).map_err(super::json::json_error)
}

/// [`to_json`] on a connection of `store`: the bytes the list answers for
/// `issues`, whichever path found them.
pub async fn list_body(store: &crate::Store, issues: &[Issue]) -> Result<Vec<u8>> {
    let mut conn = store.pool().acquire().await?;
    to_json(&mut conn, issues).await
}
