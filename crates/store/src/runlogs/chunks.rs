//! The chunks of run logs and their cut rows (migration 40).
//!
//! Offsets count the run's whole output as written: a chunk `[start, end)`
//! holds whole NDJSON lines. A log cut for its size keeps its head chunks
//! (before `head_bytes`) and its tail chunks (from `tail_start`); the
//! chunks between were deleted as the tail rolled on.

use crate::engine::db::{query, DbRow};
use crate::engine::row::RowExt;
use crate::{Result, Store};

/// One write to a run's log, applied in order with the others of its batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogWrite {
    /// Lines at `start` (their bytes end at `start + content.len()`).
    Chunk { start: u64, content: String },
    /// The log outgrew its head: the tail starts at `head`.
    Cut { head: u64, max_bytes: u64 },
    /// The tail rolled on: chunks in `[head, tail_start)` are left out.
    Drop { head: u64, tail_start: u64 },
    /// The run has ended: its marker line and where the tail starts, or
    /// `None` when nothing was left out (the log reads whole again).
    Close { marker: Option<(String, u64)> },
}

/// Where a log was cut; `marker` once its run has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutRow {
    pub head_bytes: u64,
    pub tail_start: u64,
    pub max_bytes: u64,
    pub marker: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    pub start: u64,
    pub content: String,
}

/// What one read of a log found, in one statement (one snapshot).
#[derive(Debug, Clone, Default)]
pub struct Fetched {
    /// The run's `logStore` (set when it finished), if the run exists.
    pub log_store: Option<String>,
    /// Whether the log has its first chunk here.
    pub started: bool,
    pub cut: Option<CutRow>,
    /// Chunks overlapping the bytes asked for, by offset.
    pub chunks: Vec<Chunk>,
}

impl Fetched {
    /// A log written before logs were kept in the database: its run says
    /// `local_file` and nothing of it is here.
    pub fn is_local_file(&self) -> bool {
        self.log_store.as_deref() == Some("local_file") && !self.started && self.cut.is_none()
    }
}

fn offset(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Applies a batch of writes to the log of `run_id` in one transaction.
pub async fn write(store: &Store, run_id: &str, batch: &[LogWrite]) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let mut tx = store.begin().await?;
    for w in batch {
        match w {
            LogWrite::Chunk { start, content } => {
                // A chunk written twice (a batch retried after its commit
                // was not confirmed) is the same chunk.
                query(
                    "INSERT INTO run_log_chunks (run_id, start_offset, end_offset, content) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, start_offset) DO NOTHING",
                )
                .bind(run_id)
                .bind(int(*start))
                .bind(int(start + content.len() as u64))
                .bind(content.as_str())
                .execute(tx.conn())
                .await?;
            }
            LogWrite::Cut { head, max_bytes } => {
                query(
                    "INSERT INTO run_log_cuts (run_id, head_bytes, tail_start, max_bytes) \
                     VALUES ($1, $2, $2, $3) ON CONFLICT (run_id) DO NOTHING",
                )
                .bind(run_id)
                .bind(int(*head))
                .bind(int(*max_bytes))
                .execute(tx.conn())
                .await?;
            }
            LogWrite::Drop { head, tail_start } => {
                query(
                    "DELETE FROM run_log_chunks WHERE run_id = $1 AND start_offset >= $2 \
                     AND start_offset < $3",
                )
                .bind(run_id)
                .bind(int(*head))
                .bind(int(*tail_start))
                .execute(tx.conn())
                .await?;
                query("UPDATE run_log_cuts SET tail_start = $2 WHERE run_id = $1")
                    .bind(run_id)
                    .bind(int(*tail_start))
                    .execute(tx.conn())
                    .await?;
            }
            LogWrite::Close {
                marker: Some((marker, tail_start)),
            } => {
                query("UPDATE run_log_cuts SET tail_start = $2, marker = $3 WHERE run_id = $1")
                    .bind(run_id)
                    .bind(int(*tail_start))
                    .bind(marker.as_str())
                    .execute(tx.conn())
                    .await?;
            }
            LogWrite::Close { marker: None } => {
                query("DELETE FROM run_log_cuts WHERE run_id = $1")
                    .bind(run_id)
                    .execute(tx.conn())
                    .await?;
            }
        }
    }
    tx.commit().await
}

/// The log of `run_id` for a read of `limit` bytes from `from`: its cut
/// row, and the chunks overlapping `[from, from + limit)` and, when the log
/// is cut, the first `limit` bytes of its tail from `from` on (a read of
/// the head may go on into the tail after the marker). One statement, so
/// a tail rolling on meanwhile is seen before or after, never halfway.
/// `limit` 0 reads no chunk.
pub async fn fetch(store: &Store, run_id: &str, from: u64, limit: u64) -> Result<Fetched> {
    let rows = query(
        "SELECT 'run' AS part, CAST(0 AS BIGINT) AS a, CAST(0 AS BIGINT) AS b, \
         CAST(0 AS BIGINT) AS c, log_store AS content FROM heartbeat_runs WHERE id = $1 \
         UNION ALL SELECT 'cut', head_bytes, tail_start, max_bytes, marker FROM run_log_cuts \
         WHERE run_id = $1 \
         UNION ALL SELECT 'first', CAST(0 AS BIGINT), CAST(0 AS BIGINT), CAST(0 AS BIGINT), \
         CAST(NULL AS TEXT) FROM run_log_chunks WHERE run_id = $1 AND start_offset = 0 \
         UNION ALL SELECT 'chunk', start_offset, end_offset, CAST(0 AS BIGINT), content \
         FROM run_log_chunks WHERE run_id = $1 AND end_offset > $2 AND ( \
           start_offset < $3 OR ( \
             start_offset >= (SELECT tail_start FROM run_log_cuts WHERE run_id = $1) \
             AND start_offset < (SELECT CASE WHEN tail_start > $2 THEN tail_start ELSE $2 END \
               FROM run_log_cuts WHERE run_id = $1) + $4))",
    )
    .bind(run_id)
    // No chunk ends past the largest offset.
    .bind(if limit == 0 { i64::MAX } else { int(from) })
    .bind(int(from.saturating_add(limit)))
    .bind(int(limit))
    .fetch_all(store.pool())
    .await?;
    let mut out = Fetched::default();
    for row in &rows {
        fetched_row(&mut out, row)?;
    }
    out.chunks.sort_by_key(|c| c.start);
    Ok(out)
}

fn fetched_row(out: &mut Fetched, row: &DbRow) -> Result<()> {
    match row.text(0)?.as_str() {
        "run" => out.log_store = row.opt_text(4)?,
        "cut" => {
            out.cut = Some(CutRow {
                head_bytes: offset(row.int(1)?),
                tail_start: offset(row.int(2)?),
                max_bytes: offset(row.int(3)?),
                marker: row.opt_text(4)?,
            })
        }
        "first" => out.started = true,
        _ => out.chunks.push(Chunk {
            start: offset(row.int(1)?),
            content: row.opt_text(4)?.unwrap_or_default(),
        }),
    }
    Ok(())
}

/// Deletes the log of `run_id`; `false` if there was none.
pub async fn remove(store: &Store, run_id: &str) -> Result<bool> {
    let mut tx = store.begin().await?;
    let chunks = query("DELETE FROM run_log_chunks WHERE run_id = $1")
        .bind(run_id)
        .execute(tx.conn())
        .await?
        .rows_affected();
    let cuts = query("DELETE FROM run_log_cuts WHERE run_id = $1")
        .bind(run_id)
        .execute(tx.conn())
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(chunks + cuts > 0)
}
