//! SQL pieces shared by every table: a list of any length as one parameter,
//! numbered placeholders, a bound value of either type, and the change map an
//! update records in its activity row.

use serde_json::{json, Map, Value};

/// What a list bound as one JSON array holds.
#[derive(Clone, Copy)]
pub(crate) enum ListOf {
    /// Ids (`uuid` on Postgres).
    Ids,
    /// Task numbers.
    Numbers,
}

/// `(SELECT ...)` of the values of the JSON array bound as `param`: how a
/// list of any length is one parameter on both engines.
pub(crate) fn json_values(backend: crate::Backend, param: &str, of: ListOf) -> String {
    match (backend, of) {
        (crate::Backend::Sqlite, _) => format!("(SELECT value FROM json_each({param}))"),
        // Text that is no UUID names no row, and must not fail the cast.
        (crate::Backend::Postgres, ListOf::Ids) => format!(
            "(SELECT CAST(value AS UUID) FROM json_array_elements_text(CAST({param} AS json)) \
             WHERE value ~ '^[0-9a-fA-F]{{8}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{4}}-[0-9a-fA-F]{{12}}$')"
        ),
        (crate::Backend::Postgres, ListOf::Numbers) => format!(
            "(SELECT CAST(value AS BIGINT) FROM json_array_elements_text(CAST({param} AS json)))"
        ),
    }
}

pub(crate) fn json_array<T: serde::Serialize>(values: impl Iterator<Item = T>) -> String {
    serde_json::to_string(&values.collect::<Vec<_>>()).expect("numbers and strings serialise")
}

#[derive(Clone)]
pub(crate) enum Bind {
    Text(String),
    Int(i64),
}

/// `$start, $start+1, …` for `n` values.
pub(crate) fn placeholders(start: usize, n: usize) -> String {
    (start..start + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Records `field` in an update's `changes` when it changed.
pub(crate) fn diff<T: serde::Serialize + PartialEq>(
    changes: &mut Map<String, Value>,
    field: &str,
    from: &T,
    to: &T,
) {
    if from != to {
        changes.insert(field.to_string(), json!({ "from": from, "to": to }));
    }
}
