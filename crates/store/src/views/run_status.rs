//! The status lines adapters report (seed 004's status hook): the newest one
//! of each running run of a company, for the agents' cards, in one query
//! (running runs are few: at most each agent's concurrency).

use paperclip_core::run_status::{RunEventType, StatusColor, StatusUpdate};

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{Result, Store};

/// The newest status line of a running run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStatusLine {
    pub run_id: String,
    pub agent_id: String,
    pub status: StatusUpdate,
}

pub async fn running(store: &Store, company_id: &str) -> Result<Vec<RunStatusLine>> {
    let kind = RunEventType::AdapterStatus.as_str();
    let sql = format!(
        "SELECT r.id, r.agent_id, e.message, e.payload FROM heartbeat_runs r \
         JOIN heartbeat_run_events e ON e.run_id = r.id AND e.seq = \
           (SELECT x.seq FROM heartbeat_run_events x WHERE x.run_id = r.id \
              AND x.event_type = '{kind}' ORDER BY x.seq DESC LIMIT 1) \
         WHERE r.company_id = $1 AND r.status = 'running' ORDER BY r.id"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
    let mut out = Vec::new();
    for row in &rows {
        if let Some(line) = line(row)? {
            out.push(line);
        }
    }
    Ok(out)
}

fn line(row: &DbRow) -> Result<Option<RunStatusLine>> {
    let color = color_of(row.opt_json("payload")?.as_ref())?;
    let message = row.opt_text("message")?.unwrap_or_default();
    let Some(status) = StatusUpdate::new(&message, color) else {
        return Ok(None);
    };
    Ok(Some(RunStatusLine {
        run_id: row.text("id")?,
        agent_id: row.text("agent_id")?,
        status,
    }))
}

/// The colour a status event's payload names; one we never write is an
/// error, not grey.
pub fn color_of(payload: Option<&serde_json::Value>) -> Result<Option<StatusColor>> {
    match payload
        .and_then(|p| p.get("color"))
        .and_then(|c| c.as_str())
    {
        None => Ok(None),
        Some(text) => StatusColor::parse(text).map(Some).ok_or_else(|| {
            let why = format!("unknown status colour {text:?} in a run event");
            crate::Error::Database(sqlx::Error::Decode(why.into()))
        }),
    }
}
