//! Typed column access for `AnyRow`, so mappers read as a list of fields.
//! Columns are named (`"id"`) or, on hot paths that select an explicit
//! column list, numbered (`0`), which skips the name lookup.

use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::{ColumnIndex, Row};

pub(crate) trait RowExt {
    fn text<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<String>;
    fn opt_text<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Option<String>>;
    fn int<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<i64>;
    fn flag<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<bool>;
    fn json<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Value>;
    fn opt_json<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Option<Value>>;
}

impl RowExt for AnyRow {
    fn text<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<String> {
        self.try_get(col)
    }
    fn opt_text<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Option<String>> {
        self.try_get(col)
    }
    fn int<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<i64> {
        self.try_get(col)
    }
    fn flag<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<bool> {
        Ok(self.try_get::<i64, _>(col)? != 0)
    }
    fn json<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Value> {
        let text: String = self.try_get(col)?;
        serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }
    fn opt_json<I: ColumnIndex<AnyRow>>(&self, col: I) -> sqlx::Result<Option<Value>> {
        match self.try_get::<Option<String>, _>(col)? {
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| sqlx::Error::Decode(Box::new(e))),
            None => Ok(None),
        }
    }
}

/// The one row `sql` (which takes the id as `$1`) finds, mapped, or
/// "<what> not found". Works on the pool and inside a transaction alike.
pub(crate) async fn one_by_id<'c, T>(
    executor: impl sqlx::Executor<'c, Database = sqlx::Any>,
    sql: &str,
    id: &str,
    map: fn(&AnyRow) -> crate::Result<T>,
    what: &str,
) -> crate::Result<T> {
    let row = sqlx::query(sql).bind(id).fetch_optional(executor).await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| crate::Error::not_found(what))
}
