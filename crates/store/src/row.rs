//! Typed column access for `AnyRow`, so mappers read as a list of fields.

use serde_json::Value;
use sqlx::any::AnyRow;
use sqlx::Row;

pub(crate) trait RowExt {
    fn text(&self, col: &str) -> sqlx::Result<String>;
    fn opt_text(&self, col: &str) -> sqlx::Result<Option<String>>;
    fn int(&self, col: &str) -> sqlx::Result<i64>;
    fn flag(&self, col: &str) -> sqlx::Result<bool>;
    fn json(&self, col: &str) -> sqlx::Result<Value>;
    fn opt_json(&self, col: &str) -> sqlx::Result<Option<Value>>;
}

impl RowExt for AnyRow {
    fn text(&self, col: &str) -> sqlx::Result<String> {
        self.try_get(col)
    }
    fn opt_text(&self, col: &str) -> sqlx::Result<Option<String>> {
        self.try_get(col)
    }
    fn int(&self, col: &str) -> sqlx::Result<i64> {
        self.try_get(col)
    }
    fn flag(&self, col: &str) -> sqlx::Result<bool> {
        Ok(self.try_get::<i64, _>(col)? != 0)
    }
    fn json(&self, col: &str) -> sqlx::Result<Value> {
        let text: String = self.try_get(col)?;
        serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }
    fn opt_json(&self, col: &str) -> sqlx::Result<Option<Value>> {
        match self.try_get::<Option<String>, _>(col)? {
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| sqlx::Error::Decode(Box::new(e))),
            None => Ok(None),
        }
    }
}
