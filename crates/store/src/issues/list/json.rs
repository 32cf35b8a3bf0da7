//! The default task list (`GET /api/companies/:id/issues`, no filter, newest
//! first) written as JSON straight from SQLite's statement, in one pass.
//!
//! The typed path reads the page twice (the sizes, then the rows), builds an
//! `Issue` of ~15 strings per row and serialises it again: for a page of
//! 1,000 that was a third of the list's time. Here each row's columns go
//! from the statement's buffer into the body once. The bytes are the typed
//! path's exactly (`tests` compare them), so the two cannot drift: a row
//! with labels or blockers, rare, is still built as an `Issue` and
//! serialised by serde into its place.

use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::limits::ISSUE_PAGE_TEXT_BUDGET;
use paperclip_core::model::Issue;
use paperclip_core::stored::Stored;

use crate::engine::db::{Arg, Conn};
use crate::engine::raw::RawRow;
use crate::engine::sql::Bind;
use crate::issues::list::filter::{check_cursor, filtered, Filter, Position, Reach, Use};
use crate::issues::list::matching::{matching, Matching};
use crate::issues::list::query::list;
use crate::issues::list::rollup::{self, Listed, LAST_ACTIVITY};
use crate::issues::table::{attach_relations_where, map, COLUMNS};
use crate::{Error, Result, Store};

/// A page of tasks as the JSON array the API answers.
pub struct JsonPage {
    pub body: Vec<u8>,
    /// Set when more tasks match than fit on this page.
    pub next_cursor: Option<Position>,
}

/// What each column of [`COLUMNS`] is, by position, and its JSON name.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    OptText,
    Int,
    Status,
    Priority,
    /// Stored JSON text, written as it is (the store writes it compact).
    OptJson,
}

const FIELDS: [(&str, Kind); 41] = [
    ("id", Kind::Text),
    ("companyId", Kind::Text),
    ("projectId", Kind::OptText),
    ("goalId", Kind::OptText),
    ("parentId", Kind::OptText),
    ("title", Kind::Text),
    ("description", Kind::OptText),
    ("status", Kind::Status),
    ("priority", Kind::Priority),
    ("assigneeAgentId", Kind::OptText),
    ("assigneeUserId", Kind::OptText),
    ("checkoutRunId", Kind::OptText),
    ("executionRunId", Kind::OptText),
    ("executionLockedAt", Kind::OptText),
    ("createdByAgentId", Kind::OptText),
    ("createdByUserId", Kind::OptText),
    ("issueNumber", Kind::Int),
    ("identifier", Kind::Text),
    ("originKind", Kind::Text),
    ("requestDepth", Kind::Int),
    ("billingCode", Kind::OptText),
    ("startedAt", Kind::OptText),
    ("completedAt", Kind::OptText),
    ("cancelledAt", Kind::OptText),
    ("createdAt", Kind::Text),
    ("updatedAt", Kind::Text),
    ("statusVersion", Kind::Int),
    ("executionPolicy", Kind::OptJson),
    ("executionState", Kind::OptJson),
    ("monitorNextCheckAt", Kind::OptText),
    ("monitorWakeRequestedAt", Kind::OptText),
    ("monitorLastTriggeredAt", Kind::OptText),
    ("monitorAttemptCount", Kind::Int),
    ("monitorNotes", Kind::OptText),
    ("monitorScheduledBy", Kind::OptText),
    ("responsibleUserId", Kind::OptText),
    ("conversationAgentId", Kind::OptText),
    ("conversationUserId", Kind::OptText),
    ("conversationState", Kind::OptText),
    ("conversationSessionGeneration", Kind::Int),
    ("conversationBoundaryCommentId", Kind::OptText),
];

const TITLE: usize = 5;
const DESCRIPTION: usize = 6;
const STATUS: usize = 7;
const NUMBER: usize = 16;
const EXECUTION_RUN: usize = 12;
const FLAG: usize = FIELDS.len();
/// [`rollup::LAST_ACTIVITY`], after the flag.
const LAST: usize = FLAG + 1;

/// What follows the columns in every task without relations (then the
/// list's rollups, [`rollup::write_idle`]): `workMode`
/// (always standard work here), no `sourceTrust` (always null), the empty
/// relation lists and no attention
/// (a blocked task or one in review is built as an `Issue`, as those with
/// relations are).
const TAIL: &[u8] = concat!(
    r#","workMode":"standard","sourceTrust":null,"#,
    r#""labels":[],"labelIds":[],"blockedBy":[],"blocks":[],"#,
    r#""blockerAttention":{"state":"none","reason":null,"unresolvedBlockerCount":0,"#,
    r#""coveredBlockerCount":0,"stalledBlockerCount":0,"attentionBlockerCount":0,"#,
    r#""pendingFinalizeBlockerIssueIds":[],"sampleBlockerIdentifier":null,"#,
    r#""sampleStalledBlockerIdentifier":null,"blockingTreeLive":false,"#,
    r#""directBlockerIssueId":null,"terminalBlockerIssueId":null,"terminalBlocker":null},"#,
    r#""reviewAttention":{"state":"none","paths":[],"reason":null}"#
)
.as_bytes();

/// The page of `filter` as JSON. On SQLite one pass over the statement that
/// walks the filter's index to the page (a search, matched a range of numbers
/// at a time, takes the typed list); on Postgres the typed list, serialised.
pub async fn list_json(store: &Store, company_id: &str, filter: &Filter) -> Result<JsonPage> {
    check_cursor(filter)?;
    let search = filter.q.as_deref().is_some_and(|q| !q.trim().is_empty());
    if store.backend() != crate::Backend::Sqlite || search {
        let page = list(store, company_id, filter).await?;
        let mut conn = store.pool().acquire().await?;
        return Ok(JsonPage {
            body: rollup::to_json(&mut conn, &page.issues).await?,
            next_cursor: page.next_cursor,
        });
    }
    // The relation flag kept on the row (SQLite's migration 20), not the
    // typed path's three probes per row.
    let (sql, args) = if filtered(filter) {
        // Filtered: the typed list's own conditions (labels on many tasks
        // probed per row, on few driving), in number order, in one pass
        // instead of a pass for the sizes and a read of the chosen rows.
        let Some(Matching { from, binds, .. }) = matching(
            store,
            company_id,
            filter,
            Use::Walk,
            Some(Reach {
                past: filter.cursor.as_ref().map(|c| c.number),
                down: true,
                rows: filter.limit.saturating_add(1),
            }),
        )
        .await?
        else {
            return Ok(JsonPage {
                body: b"[]".to_vec(),
                next_cursor: None,
            });
        };
        let mut args: Vec<Arg> = binds
            .into_iter()
            .map(|bind| match bind {
                Bind::Text(text) => Arg::from(text),
                Bind::Int(n) => Arg::from(n),
            })
            .collect();
        args.push(Arg::from(filter.limit.saturating_add(1)));
        let sql = format!(
            "SELECT {COLUMNS}, relation_count, {LAST_ACTIVITY} {from} ORDER BY issue_number DESC LIMIT ${}",
            args.len()
        );
        (sql, args)
    } else {
        // Chats are left out as `matching` leaves them out.
        let chats = if crate::issues::chat::company_has_chats(store, company_id).await? {
            "AND conversation_agent_id IS NULL"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {COLUMNS}, relation_count, {LAST_ACTIVITY} FROM issues WHERE company_id = $1 \
             AND issue_number < $2 {chats} ORDER BY issue_number DESC LIMIT $3"
        );
        let args = vec![
            Arg::from(company_id),
            Arg::from(filter.cursor.as_ref().map_or(i64::MAX, |c| c.number)),
            Arg::from(filter.limit.saturating_add(1)),
        ];
        (sql, args)
    };
    let mut conn = store.pool().acquire().await?;
    let Conn::SqlitePooled(sqlite) = &mut conn else {
        unreachable!("a SQLite store lends SQLite connections");
    };
    let mut page = Writer::new(filter.limit);
    crate::engine::raw::step_rows(sqlite, &sql, &args, |row| page.row(row)).await?;
    page.finish(&mut conn).await
}

/// The page being written, row by row, with the limits of `page_rows`: at
/// most `limit` rows and the text budget, the first row always.
struct Writer {
    body: Vec<u8>,
    limit: i64,
    count: i64,
    text: i64,
    last: Option<i64>,
    more: bool,
    /// Rows with relations, built as issues, and where each goes in `body`.
    holes: Vec<(usize, Issue, String)>,
}

impl Writer {
    fn new(limit: i64) -> Writer {
        let rows = usize::try_from(limit.clamp(0, 1_000)).unwrap_or(0);
        Writer {
            body: Vec::with_capacity(rows * 768 + 2),
            limit,
            count: 0,
            text: 0,
            last: None,
            more: false,
            holes: Vec::new(),
        }
    }

    /// Takes one row, or stops (`false`) once the page is full.
    fn row(&mut self, row: &RawRow) -> Result<bool> {
        let size = text_len(row, TITLE)?.saturating_add(text_len(row, DESCRIPTION)?);
        self.text = self.text.saturating_add(size);
        if self.count >= self.limit || (self.count > 0 && self.text > ISSUE_PAGE_TEXT_BUDGET) {
            self.more = true;
            return Ok(false);
        }
        self.body.push(if self.count == 0 { b'[' } else { b',' });
        // Attention to work out or a run to name: built as an `Issue`.
        let attention = matches!(row.str_at(STATUS)?, Some("blocked" | "in_review"))
            || row.str_at(EXECUTION_RUN)?.is_some();
        if int(row, FLAG)? != 0 || attention {
            let last = row.text(LAST)?;
            self.holes.push((self.body.len(), map(row)?, last));
        } else {
            write_row(&mut self.body, row)?;
        }
        self.count += 1;
        self.last = Some(int(row, NUMBER)?);
        Ok(true)
    }

    async fn finish(mut self, conn: &mut Conn) -> Result<JsonPage> {
        if self.count == 0 {
            self.body.push(b'[');
        }
        self.body.push(b']');
        let next_cursor = if self.more {
            self.last.map(|number| Position { key: None, number })
        } else {
            None
        };
        if self.holes.is_empty() {
            return Ok(JsonPage {
                body: self.body,
                next_cursor,
            });
        }
        let mut at = Vec::with_capacity(self.holes.len());
        let mut issues = Vec::with_capacity(self.holes.len());
        let mut last = Vec::with_capacity(self.holes.len());
        for (place, issue, activity) in self.holes {
            at.push(place);
            issues.push(issue);
            last.push(activity);
        }
        attach_relations_where(conn, &mut issues, |_| true).await?;
        let runs = rollup::active_runs(conn, issues.iter()).await?;
        let mut body = Vec::with_capacity(self.body.len() + issues.len() * 1024);
        let mut from = 0;
        for ((at, issue), last) in at.into_iter().zip(&issues).zip(&last) {
            body.extend_from_slice(&self.body[from..at]);
            let listed = Listed {
                issue,
                active_run: issue.execution_run_id.as_ref().and_then(|id| runs.get(id)),
                last_activity_at: last,
                description_truncated: false,
            };
            serde_json::to_writer(&mut body, &listed).map_err(json_error)?;
            from = at;
        }
        body.extend_from_slice(&self.body[from..]);
        Ok(JsonPage { body, next_cursor })
    }
}

pub(crate) fn json_error(err: serde_json::Error) -> Error {
    Error::Database(sqlx::Error::Protocol(format!("writing JSON: {err}")))
}

fn text_len(row: &RawRow, at: usize) -> Result<i64> {
    Ok(row.str_at(at)?.map_or(0, |s| s.len() as i64))
}

fn int(row: &RawRow, at: usize) -> Result<i64> {
    Ok(row.int(at)?)
}

/// One task without relations, as serde writes an [`Issue`].
fn write_row(out: &mut Vec<u8>, row: &RawRow) -> Result<()> {
    for (at, (name, kind)) in FIELDS.iter().enumerate() {
        out.push(if at == 0 { b'{' } else { b',' });
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
        match kind {
            Kind::Int => {
                let mut digits = itoa::Buffer::new();
                out.extend_from_slice(digits.format(int(row, at)?).as_bytes());
            }
            Kind::Text | Kind::OptText => match row.str_at(at)? {
                Some(text) => serde_json::to_writer(&mut *out, text).map_err(json_error)?,
                None if matches!(kind, Kind::OptText) => out.extend_from_slice(b"null"),
                None => return Err(row.text(at).unwrap_err().into()),
            },
            Kind::Status => enum_value::<IssueStatus>(out, row, at)?,
            Kind::Priority => enum_value::<IssuePriority>(out, row, at)?,
            // Re-serialised, so the bytes are serde's as on the typed path.
            Kind::OptJson => match row.str_at(at)? {
                Some(text) => {
                    let value: serde_json::Value =
                        serde_json::from_str(text).map_err(json_error)?;
                    serde_json::to_writer(&mut *out, &value).map_err(json_error)?
                }
                None => out.extend_from_slice(b"null"),
            },
        }
    }
    out.extend_from_slice(TAIL);
    rollup::write_idle(out, &row.text(LAST)?).map_err(json_error)
}

/// A status or priority, checked against its enum: an unknown value in the
/// database is an error, as on the typed path.
fn enum_value<E: Stored>(out: &mut Vec<u8>, row: &RawRow, at: usize) -> Result<()> {
    let value: E = crate::engine::row::RowExt::stored(row, at)?;
    out.push(b'"');
    out.extend_from_slice(Stored::as_str(value).as_bytes());
    out.push(b'"');
    Ok(())
}
