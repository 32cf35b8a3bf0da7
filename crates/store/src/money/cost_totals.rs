//! Reads of the kept monthly spend totals (`cost_month_totals`, migration
//! 13): a calendar month's summary and breakdowns read one row per agent,
//! project, model or task instead of summing the month's events. Windows
//! that are not a calendar month are summed from the events as before
//! (see [`crate::money::costs`]).

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::money::spend::{Breakdown, By, Window};
use crate::{Result, Store};

/// Spend, events and unpriced events of a month.
pub(crate) struct MonthSum {
    pub cents: i64,
    pub events: i64,
    pub unpriced_events: i64,
}

/// On tasks and with no task: cents, tokens and unpriced tokens of a month.
#[derive(Default)]
pub(crate) struct TaskSplit {
    pub task_cents: i64,
    pub idle_cents: i64,
    pub tokens: i64,
    pub unpriced_tokens: i64,
}

pub(crate) async fn month_sum(store: &Store, company_id: &str, month: &str) -> Result<MonthSum> {
    let row = crate::engine::db::query(
        "SELECT CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT) AS cents, \
         CAST(COALESCE(SUM(events), 0) AS BIGINT) AS n, \
         CAST(COALESCE(SUM(unpriced_events), 0) AS BIGINT) AS unpriced \
         FROM cost_month_totals WHERE company_id = $1 AND month = $2 AND dim = 'task'",
    )
    .bind(company_id)
    .bind(month)
    .fetch_one(store.pool())
    .await?;
    Ok(MonthSum {
        cents: row.int("cents")?,
        events: row.int("n")?,
        unpriced_events: row.int("unpriced")?,
    })
}

pub(crate) async fn task_split(store: &Store, company_id: &str, month: &str) -> Result<TaskSplit> {
    let rows = crate::engine::db::query(
        "SELECT dim_key, cost_cents, input_tokens + cached_input_tokens + output_tokens AS tokens, \
         unpriced_tokens FROM cost_month_totals WHERE company_id = $1 AND month = $2 AND dim = 'task'",
    )
    .bind(company_id)
    .bind(month)
    .fetch_all(store.pool())
    .await?;
    let mut out = TaskSplit::default();
    for row in rows {
        let cents = row.int("cost_cents")?;
        if row.text("dim_key")? == "1" {
            out.task_cents = cents;
        } else {
            out.idle_cents = cents;
        }
        out.tokens += row.int("tokens")?;
        out.unpriced_tokens += row.int("unpriced_tokens")?;
    }
    Ok(out)
}

/// A month's breakdown, biggest first; `page` is `(limit, offset)`.
pub(crate) async fn breakdown(
    store: &Store,
    company_id: &str,
    by: By,
    month: &str,
    page: Option<(i64, i64)>,
) -> Result<Vec<Breakdown>> {
    // The key is an id's text ('' for none); ids are uuid on Postgres, and
    // the join must reach them by their index (a million tasks).
    let key = match store.backend() {
        crate::Backend::Sqlite => "t.dim_key",
        crate::Backend::Postgres => "CAST(NULLIF(t.dim_key, '') AS UUID)",
    };
    let (dim, label, join, filter) = match by {
        By::Agent => (
            "agent",
            "a.name",
            format!("LEFT JOIN agents a ON a.id = {key}"),
            "",
        ),
        By::Project => (
            "project",
            "p.name",
            format!("LEFT JOIN projects p ON p.id = {key}"),
            " AND dim_key <> ''",
        ),
        By::Model => ("model", "t.label", String::new(), ""),
        By::Issue => (
            "issue",
            "i.identifier",
            format!("LEFT JOIN issues i ON i.id = {key}"),
            " AND dim_key <> ''",
        ),
    };
    let (limit, offset) = page.unwrap_or((i64::MAX, 0));
    // The names are joined to the page only, after the top rows are chosen.
    let sql = format!(
        "SELECT t.dim_key AS k, {label} AS label, t.cost_cents, t.input_tokens, t.cached_input_tokens, \
         t.output_tokens, t.events, t.unpriced_events FROM \
         (SELECT * FROM cost_month_totals WHERE company_id = $1 AND month = $2 AND dim = '{dim}' \
          AND events > 0{filter} ORDER BY cost_cents DESC, events DESC, dim_key LIMIT $3 OFFSET $4) t \
         {join} ORDER BY t.cost_cents DESC, t.events DESC, t.dim_key"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(month)
        .bind(limit)
        .bind(offset)
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map).collect()
}

fn map(r: &DbRow) -> Result<Breakdown> {
    Ok(Breakdown {
        key: r.opt_text("k")?.filter(|k| !k.is_empty()),
        label: r.opt_text("label")?,
        cost_cents: r.int("cost_cents")?,
        input_tokens: r.int("input_tokens")?,
        cached_input_tokens: r.int("cached_input_tokens")?,
        output_tokens: r.int("output_tokens")?,
        event_count: r.int("events")?,
        unpriced_event_count: r.int("unpriced_events")?,
    })
}

impl Window {
    /// `YYYY-MM` when the window is exactly that UTC calendar month.
    pub fn month_key(&self) -> Option<&str> {
        let key = self.start.get(..7)?;
        let (start, end) = paperclip_core::budget::window_of_month(key)?;
        (start == self.start && end == self.end).then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn only_a_calendar_month_has_a_month_key() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 12, 31, 23, 59, 59)
            .unwrap();
        assert_eq!(Window::month_of(t).month_key(), Some("2026-12"));
        let part = Window {
            start: "2026-12-02T00:00:00.000Z".into(),
            end: "2027-01-01T00:00:00.000Z".into(),
        };
        assert_eq!(part.month_key(), None);
        let two = Window {
            start: "2026-11-01T00:00:00.000Z".into(),
            end: "2027-01-01T00:00:00.000Z".into(),
        };
        assert_eq!(two.month_key(), None);
    }
}
