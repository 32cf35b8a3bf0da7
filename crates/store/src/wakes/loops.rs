//! The loop breaker: counts the wakes agents cause each other on one task
//! (mentions, comments, hand-offs) and holds further ones once a task takes
//! more than `core::thrift::LOOP_MAX_WAKES` within the window without
//! progress. A status change or a board comment is progress and starts the
//! count over; the board can release a held task, which delivers one wake to
//! each agent whose wakes were held.

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::budget::stamp;
use paperclip_core::thrift::{self, LoopVerdict, LoopWindow};
use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{now, Error, Result, Store, Tx};

/// A task's loop-breaker state, as the board sees it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoopState {
    pub issue_id: String,
    pub identifier: String,
    pub title: String,
    /// Agent-caused wakes counted since `windowStartedAt`.
    pub wakes: i64,
    pub window_started_at: String,
    /// Set while agent-caused wakes on the task are held.
    pub held_at: Option<String>,
    /// Wakes held since then.
    pub held_wakes: i64,
    pub limit: i64,
    pub window_minutes: i64,
}

/// Takes the task's counter row before the woken agent's row, so that two
/// transactions waking agents on one task lock in one order (task, then
/// agents by id) and cannot deadlock on Postgres.
pub(crate) async fn lock(tx: &mut Tx, issue_id: &str) -> Result<()> {
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO issue_wake_loops (issue_id, company_id, window_started_at, wake_count, updated_at) \
         SELECT id, company_id, $2, 0, $2 FROM issues WHERE id = $1 \
         ON CONFLICT (issue_id) DO NOTHING",
    )
    .bind(issue_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE issue_wake_loops SET updated_at = updated_at WHERE issue_id = $1",
    )
    .bind(issue_id)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Counts one agent-caused wake on the task (locked by [`lock`]), made at
/// `ts` (its request's time, so a hold starts with the wake that tripped
/// it); `true` when it must be held.
pub(crate) async fn count(tx: &mut Tx, actor: &Actor, issue_id: &str, ts: &str) -> Result<bool> {
    let row = crate::engine::db::query(
        "SELECT company_id, window_started_at, wake_count, held_at FROM issue_wake_loops WHERE issue_id = $1",
    )
    .bind(issue_id)
    .fetch_optional(tx.conn())
    .await?;
    let Some(row) = row else {
        // The task is gone; nothing to count against.
        return Ok(false);
    };
    let company_id = row.text("company_id")?;
    let current = match row.int("wake_count")? {
        0 => None,
        wakes => Some(LoopWindow {
            started_at: parse(&row.text("window_started_at")?)?,
            wakes,
            held: row.opt_text("held_at")?.is_some(),
        }),
    };
    let now_at = parse(ts)?;
    let (window, tripped) = match thrift::count_wake(current, now_at) {
        LoopVerdict::Held => return Ok(true),
        LoopVerdict::Deliver(w) => (w, false),
        LoopVerdict::Trip(w) => (w, true),
    };
    crate::engine::db::query(
        "UPDATE issue_wake_loops SET window_started_at = $2, wake_count = $3, \
         held_at = CASE WHEN $4 THEN $5 ELSE held_at END, updated_at = $5 WHERE issue_id = $1",
    )
    .bind(issue_id)
    .bind(stamp(window.started_at))
    .bind(window.wakes)
    .bind(tripped)
    .bind(ts)
    .execute(tx.conn())
    .await?;
    if tripped {
        activity::record(
            tx,
            actor,
            Entry {
                company_id: &company_id,
                action: Action::IssueWakeLoopHeld,
                entity_type: EntityType::Issue,
                entity_id: issue_id,
                details: json!({
                    "wakes": window.wakes,
                    "windowStartedAt": stamp(window.started_at),
                    "limit": thrift::LOOP_MAX_WAKES,
                    "windowMinutes": thrift::LOOP_WINDOW_MINUTES,
                }),
            },
        )
        .await?;
    }
    Ok(tripped)
}

/// Progress on the task (a status change, a board comment): the count
/// starts over and a hold is lifted.
pub(crate) async fn reset(tx: &mut Tx, issue_id: &str) -> Result<()> {
    crate::engine::db::query("DELETE FROM issue_wake_loops WHERE issue_id = $1")
        .bind(issue_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}

const STATE: &str = "SELECT l.issue_id, i.identifier, i.title, l.wake_count, l.window_started_at, l.held_at, \
     (SELECT COUNT(*) FROM agent_wakeup_requests w WHERE w.issue_id = l.issue_id AND w.skip_reason = 'loop_held' \
      AND w.created_at >= l.held_at) AS held_wakes \
     FROM issue_wake_loops l JOIN issues i ON i.id = l.issue_id";

/// The task's state, if agents have woken each other on it since its last progress.
pub async fn state(store: &Store, issue_id: &str) -> Result<Option<LoopState>> {
    let row = crate::engine::db::query(&format!(
        "{STATE} WHERE l.issue_id = $1 AND l.wake_count > 0"
    ))
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map).transpose()
}

/// The company's held tasks, longest held first: the board's inbox items.
pub async fn held(store: &Store, company_id: &str) -> Result<Vec<LoopState>> {
    let rows = crate::engine::db::query(&format!(
        "{STATE} WHERE l.company_id = $1 AND l.held_at IS NOT NULL ORDER BY l.held_at LIMIT 100"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

fn map(row: &crate::engine::db::DbRow) -> Result<LoopState> {
    Ok(LoopState {
        issue_id: row.text("issue_id")?,
        identifier: row.text("identifier")?,
        title: row.text("title")?,
        wakes: row.int("wake_count")?,
        window_started_at: row.text("window_started_at")?,
        held_at: row.opt_text("held_at")?,
        held_wakes: row.int("held_wakes")?,
        limit: thrift::LOOP_MAX_WAKES,
        window_minutes: thrift::LOOP_WINDOW_MINUTES,
    })
}

fn parse(ts: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(ts)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            Error::Database(sqlx::Error::Decode(
                format!("bad stored time {ts:?}: {e}").into(),
            ))
        })
}
