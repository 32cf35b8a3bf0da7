//! The task board's running indicators: every running run of the company
//! that works on a task, with its newest step, in one query whatever the
//! number of cards (running runs are few: at most each agent's concurrency).

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{Result, Store};

/// A run working on a task now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningTask {
    pub run_id: String,
    pub issue_id: String,
    pub agent_id: String,
    /// Where its log is (`logRef`), for the newest output line.
    pub log_ref: Option<String>,
    /// The log's size when output was last noted (its tail is near here).
    pub log_bytes: Option<i64>,
    /// The newest step of its timeline: `(event type, message)`.
    pub step: Option<(String, String)>,
}

/// Timeline events that say what the agent is doing (a coding CLI's
/// transcript; the command a process agent was started with).
const STEP_KINDS: &str = "'transcript.assistant', 'transcript.tool_call', 'transcript.error', \
     'transcript.init', 'adapter.invoke', 'session.reset'";

pub async fn running_tasks(store: &Store, company_id: &str) -> Result<Vec<RunningTask>> {
    // The newest step by a seek of the run's `(run_id, seq)` index from
    // its end; a running run has a short timeline.
    let sql = format!(
        "SELECT r.id, r.issue_id, r.agent_id, r.log_ref, r.last_output_bytes, \
           (SELECT e.event_type FROM heartbeat_run_events e WHERE e.run_id = r.id \
              AND e.event_type IN ({STEP_KINDS}) ORDER BY e.seq DESC LIMIT 1) AS step_kind, \
           (SELECT e.message FROM heartbeat_run_events e WHERE e.run_id = r.id \
              AND e.event_type IN ({STEP_KINDS}) ORDER BY e.seq DESC LIMIT 1) AS step_message \
         FROM heartbeat_runs r \
         WHERE r.company_id = $1 AND r.status = 'running' AND r.issue_id IS NOT NULL \
         ORDER BY r.id"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(running).collect()
}

fn running(row: &DbRow) -> Result<RunningTask> {
    let step = match (row.opt_text("step_kind")?, row.opt_text("step_message")?) {
        (Some(kind), Some(message)) => Some((kind, message)),
        _ => None,
    };
    Ok(RunningTask {
        run_id: row.text("id")?,
        issue_id: row.text("issue_id")?,
        agent_id: row.text("agent_id")?,
        log_ref: row.opt_text("log_ref")?,
        log_bytes: DbRow::try_get(row, "last_output_bytes")?,
        step,
    })
}
