//! Typed column access for rows of either engine, so mappers read as a list
//! of fields. Columns are named (`"id"`) or, on hot paths that select an
//! explicit column list, numbered (`0`), which skips the name lookup.

use paperclip_core::stored::Stored;
use serde_json::Value;

use crate::engine::db::{ColIdx, DbRow, Exec};
use crate::engine::raw::RawRow;

pub(crate) trait RowExt {
    fn text<I: ColIdx>(&self, col: I) -> sqlx::Result<String>;
    fn opt_text<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<String>>;
    fn int<I: ColIdx>(&self, col: I) -> sqlx::Result<i64>;
    fn flag<I: ColIdx>(&self, col: I) -> sqlx::Result<bool>;
    fn json<I: ColIdx>(&self, col: I) -> sqlx::Result<Value>;
    fn opt_json<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<Value>>;
    /// A status, role or level: one the enum names, or an error.
    fn stored<E: Stored, I: ColIdx>(&self, col: I) -> sqlx::Result<E>;
    fn opt_stored<E: Stored, I: ColIdx>(&self, col: I) -> sqlx::Result<Option<E>> {
        self.opt_text(col)?
            .map(|t| E::from_stored(&t).ok_or_else(|| unknown::<E, I>(col, &t)))
            .transpose()
    }
}

impl RowExt for DbRow {
    fn text<I: ColIdx>(&self, col: I) -> sqlx::Result<String> {
        self.try_get(col)
    }
    fn opt_text<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<String>> {
        self.try_get(col)
    }
    fn int<I: ColIdx>(&self, col: I) -> sqlx::Result<i64> {
        self.try_get(col)
    }
    fn flag<I: ColIdx>(&self, col: I) -> sqlx::Result<bool> {
        Ok(self.try_get::<i64, _>(col)? != 0)
    }
    fn json<I: ColIdx>(&self, col: I) -> sqlx::Result<Value> {
        let text: String = self.try_get(col)?;
        serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }
    fn opt_json<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<Value>> {
        match self.try_get::<Option<String>, _>(col)? {
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| sqlx::Error::Decode(Box::new(e))),
            None => Ok(None),
        }
    }
    fn stored<E: Stored, I: ColIdx>(&self, col: I) -> sqlx::Result<E> {
        let text: String = self.try_get(col)?;
        E::from_stored(&text).ok_or_else(|| unknown::<E, I>(col, &text))
    }
}

impl RowExt for RawRow {
    fn text<I: ColIdx>(&self, col: I) -> sqlx::Result<String> {
        RawRow::text(self, col)
    }
    fn opt_text<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<String>> {
        RawRow::opt_text(self, col)
    }
    fn int<I: ColIdx>(&self, col: I) -> sqlx::Result<i64> {
        RawRow::int(self, col)
    }
    fn flag<I: ColIdx>(&self, col: I) -> sqlx::Result<bool> {
        Ok(RawRow::int(self, col)? != 0)
    }
    fn json<I: ColIdx>(&self, col: I) -> sqlx::Result<Value> {
        self.opt_json(col)?
            .ok_or_else(|| sqlx::Error::ColumnDecode {
                index: format!("{col:?}"),
                source: "unexpected NULL".into(),
            })
    }
    fn opt_json<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<Value>> {
        RawRow::opt_json(self, col)
    }
    fn stored<E: Stored, I: ColIdx>(&self, col: I) -> sqlx::Result<E> {
        let text = self.stored_text(col)?;
        E::from_stored(text).ok_or_else(|| unknown::<E, I>(col, text))
    }
}

fn unknown<E: Stored, I: ColIdx>(col: I, text: &str) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: format!("{col:?}"),
        source: format!("unknown {} {text:?} in the database", E::WHAT).into(),
    }
}

/// The one row `sql` (which takes the id as `$1`) finds, mapped, or
/// "<what> not found". Works on the pool and inside a transaction alike.
pub(crate) async fn one_by_id<'e, T>(
    executor: impl Exec<'e>,
    sql: &str,
    id: &str,
    map: fn(&DbRow) -> crate::Result<T>,
    what: &str,
) -> crate::Result<T> {
    let row = crate::engine::db::query(sql)
        .bind(id)
        .fetch_optional(executor)
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| crate::Error::not_found(what))
}
