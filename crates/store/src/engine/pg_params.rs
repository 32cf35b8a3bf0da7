//! The type Postgres gives each parameter of a statement, so a value the
//! store binds as text reaches a native column as that column's type.
//!
//! Statements are written once for both engines, and the store binds ids,
//! times and JSON as text: SQLite keeps them as text. Postgres keeps JSON as
//! `jsonb`, times as `timestamptz`, flags as `boolean` and ids as `uuid`
//! (migrations 25 to 27), and sqlx declares each parameter's type from its Rust value, so a
//! text parameter written to a `jsonb` column is an error there. Each statement is therefore described
//! once, with no declared types, on a connection kept for it: Postgres
//! infers each parameter's type from its context, as it does for a literal,
//! and the bind is converted to that type ([`crate::engine::db`]). A parameter
//! Postgres cannot type that way (its first use is `$2 IS NULL`) keeps the
//! type of its value.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::types::Oid;
use sqlx::postgres::{PgArgumentBuffer, PgConnectOptions, PgConnection, PgTypeInfo, Postgres};
use sqlx::{Connection, Either, Executor, Statement, TypeInfo};

/// Distinct statements remembered; past this many the memory starts over
/// (lists bind up to a thousand ids, one statement per count).
const REMEMBERED: usize = 4096;

/// A parameter's type where it is not the type of the value bound to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Param {
    Json,
    Bool,
    Time,
    Uuid,
    /// The value's own type.
    Same,
}

pub struct Params {
    options: PgConnectOptions,
    conn: tokio::sync::Mutex<Option<PgConnection>>,
    /// `None`: bind every value as its own type.
    known: RwLock<HashMap<String, Option<Arc<[Param]>>>>,
}

impl Params {
    pub(crate) fn new(options: PgConnectOptions) -> Params {
        Params {
            options,
            conn: tokio::sync::Mutex::new(None),
            known: RwLock::new(HashMap::new()),
        }
    }

    /// The parameters of `sql` that need converting, or `None`. `own` is
    /// each bound value's own type, declared for a parameter Postgres cannot
    /// type from its context.
    pub(crate) async fn of(
        &self,
        sql: &str,
        binds: usize,
        own: impl FnOnce() -> Vec<PgTypeInfo>,
    ) -> Option<Arc<[Param]>> {
        if binds == 0 {
            return None;
        }
        if let Some(known) = self.known.read().expect("not poisoned").get(sql) {
            return known.clone();
        }
        let described = self.describe(sql, &own()).await;
        let mut known = self.known.write().expect("not poisoned");
        if known.len() >= REMEMBERED {
            known.clear();
        }
        match described {
            Ok(params) => {
                known.insert(sql.to_string(), params.clone());
                params
            }
            // The connection failed: ask again next time.
            Err(_) => None,
        }
    }

    async fn describe(&self, sql: &str, own: &[PgTypeInfo]) -> sqlx::Result<Option<Arc<[Param]>>> {
        let mut slot = self.conn.lock().await;
        if slot.is_none() {
            *slot = Some(PgConnection::connect_with(&self.options).await?);
        }
        let conn = slot.as_mut().expect("connected above");
        // Undeclared (0), but where Postgres could not type a parameter from
        // its context: then the value's own type. Postgres types a parameter
        // at its first use, so optional filters are written
        // `(agent_id = $2 OR $2 IS NULL)`, not the other way round.
        let mut declared = vec![PgTypeInfo::with_oid(Oid(0)); own.len()];
        let statement = loop {
            match conn.prepare_with(sql, &declared).await {
                Ok(statement) => break statement,
                Err(sqlx::Error::Database(e)) => match untyped(e.message()) {
                    Some(n) if n < own.len() && declared[n] != own[n] => {
                        declared[n] = own[n].clone();
                    }
                    // The statement is in error: running it says so.
                    _ => return Ok(None),
                },
                Err(other) => {
                    *slot = None;
                    return Err(other);
                }
            }
        };
        let Some(Either::Left(types)) = statement.parameters() else {
            return Ok(None);
        };
        let params: Arc<[Param]> = types.iter().map(param).collect();
        Ok(params.iter().any(|p| *p != Param::Same).then_some(params))
    }
}

/// The (0-based) parameter of Postgres's "could not determine data type of
/// parameter $N".
fn untyped(message: &str) -> Option<usize> {
    let n = message.strip_prefix("could not determine data type of parameter $")?;
    n.trim().parse::<usize>().ok()?.checked_sub(1)
}

fn param(ty: &PgTypeInfo) -> Param {
    match ty.name() {
        "JSONB" | "JSON" => Param::Json,
        "BOOL" => Param::Bool,
        "TIMESTAMPTZ" => Param::Time,
        "UUID" => Param::Uuid,
        _ => Param::Same,
    }
}

/// JSON text bound as `jsonb`: Postgres parses (and checks) it on receipt,
/// so the store never parses what it only stores.
pub(crate) struct Jsonb<'q>(pub Cow<'q, str>);

impl sqlx::Type<Postgres> for Jsonb<'_> {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(3802))
    }
}

impl sqlx::Encode<'_, Postgres> for Jsonb<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        // jsonb's binary form: a version byte, then the text.
        buf.push(1);
        buf.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

/// A `jsonb` or `json` value's text, from its binary form.
pub(crate) fn json_text(type_name: &str, bytes: &[u8]) -> sqlx::Result<String> {
    let text = match (type_name, bytes.split_first()) {
        ("JSONB", Some((1, rest))) => rest,
        ("JSONB", _) => {
            return Err(sqlx::Error::Decode(
                "an unknown jsonb format version".into(),
            ));
        }
        _ => bytes,
    };
    String::from_utf8(text.to_vec()).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// An id bound as `uuid`.
pub(crate) struct PgUuid(uuid::Uuid);

impl PgUuid {
    /// Text that is no UUID names no row, as on SQLite: it is bound as the
    /// nil UUID, which no id is (`new_id` makes v7 ones). Not NULL, which
    /// would turn an optional filter `(run_id = $2 OR $2 IS NULL)` off. Ids
    /// a client sends to be stored are checked where they come in.
    pub(crate) fn parse(text: &str) -> PgUuid {
        PgUuid(uuid::Uuid::try_parse(text).unwrap_or(uuid::Uuid::nil()))
    }
}

impl sqlx::Type<Postgres> for PgUuid {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(2950))
    }
}

impl sqlx::Encode<'_, Postgres> for PgUuid {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
}

/// A `uuid` value as the store's text (lowercase, hyphenated: as `new_id`).
pub(crate) fn uuid_text(bytes: &[u8]) -> sqlx::Result<String> {
    uuid::Uuid::from_slice(bytes)
        .map(|id| id.to_string())
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Microseconds from the Unix epoch to Postgres's (2000-01-01).
const PG_EPOCH_US: i64 = 946_684_800_000_000;

/// A time bound as `timestamptz`, from the store's text form.
pub(crate) struct Timestamptz(i64);

impl Timestamptz {
    /// The time a text names, read as SQLite compares it with stored times:
    /// a full time (`2026-12-04T21:18:32.123Z`, any offset), or a prefix of
    /// one (`2026-12-04`, `2026-12`) meaning its first instant. `None` for
    /// text that is no time at all, which then matches nothing.
    pub(crate) fn parse(text: &str) -> Option<Timestamptz> {
        use chrono::{DateTime, NaiveDate, NaiveDateTime};
        let time = DateTime::parse_from_rfc3339(text)
            .map(|t| t.to_utc())
            .or_else(|_| {
                NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
            })
            .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M").map(|t| t.and_utc()))
            .or_else(|_| {
                NaiveDate::parse_from_str(text, "%Y-%m-%d")
                    .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
            })
            .or_else(|_| {
                NaiveDate::parse_from_str(&format!("{text}-01"), "%Y-%m-%d")
                    .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
            })
            .ok()?;
        Some(Timestamptz(time.timestamp_micros() - PG_EPOCH_US))
    }
}

impl sqlx::Type<Postgres> for Timestamptz {
    fn type_info() -> PgTypeInfo {
        PgTypeInfo::with_oid(Oid(1184))
    }
}

impl sqlx::Encode<'_, Postgres> for Timestamptz {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        buf.extend_from_slice(&self.0.to_be_bytes());
        Ok(IsNull::No)
    }
}

/// A `timestamptz` value in the store's text form (as `crate::now` writes).
pub(crate) fn time_text(bytes: &[u8]) -> sqlx::Result<String> {
    let micros = <[u8; 8]>::try_from(bytes)
        .map(i64::from_be_bytes)
        .map_err(|_| sqlx::Error::Decode("a timestamptz of other than 8 bytes".into()))?;
    let time = chrono::DateTime::from_timestamp_micros(micros + PG_EPOCH_US)
        .ok_or_else(|| sqlx::Error::Decode("a timestamptz out of range".into()))?;
    Ok(time.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_in_the_stores_text_form() {
        for text in [
            "2026-12-04T21:18:32.123Z",
            "1999-12-31T23:59:59.999Z",
            "2000-01-01T00:00:00.000Z",
        ] {
            let Timestamptz(micros) = Timestamptz::parse(text).unwrap();
            assert_eq!(time_text(&micros.to_be_bytes()).unwrap(), text);
        }
    }

    #[test]
    fn the_parameter_postgres_could_not_type_is_read_from_its_message() {
        assert_eq!(
            untyped("could not determine data type of parameter $1"),
            Some(0)
        );
        assert_eq!(
            untyped("could not determine data type of parameter $12"),
            Some(11)
        );
        assert_eq!(
            untyped("could not determine data type of parameter $0"),
            None
        );
        assert_eq!(untyped("syntax error at or near \"FROM\""), None);
    }

    #[test]
    fn ids_round_trip_in_the_stores_text_form() {
        let id = crate::new_id();
        let PgUuid(parsed) = PgUuid::parse(&id);
        assert_eq!(uuid_text(parsed.as_bytes()).unwrap(), id);
        assert!(PgUuid::parse("run-crashed").0.is_nil());
        assert!(PgUuid::parse("").0.is_nil());
    }

    #[test]
    fn a_prefix_of_a_time_is_its_first_instant() {
        let at = |t: &str| Timestamptz::parse(t).map(|Timestamptz(us)| us);
        assert_eq!(at("2026-12-04"), at("2026-12-04T00:00:00.000Z"));
        assert_eq!(at("2026-12"), at("2026-12-01T00:00:00.000Z"));
        assert_eq!(
            at("2026-12-04T22:18:32.123+01:00"),
            at("2026-12-04T21:18:32.123Z")
        );
        assert_eq!(at("not a time"), None);
        assert_eq!(at(""), None);
    }
}
