//! The two engines behind one small query API, on sqlx's concrete drivers.
//!
//! Every aggregate module writes a query once (`$n` parameters, SQL both
//! engines accept) and runs it on whichever engine the store opened. Binds are
//! collected as [`Arg`]s and applied to the engine's own argument buffer, and
//! rows come back as the engine's own row type inside [`DbRow`], so a value is
//! decoded straight from the driver's buffer. (sqlx's `Any` driver, used
//! before, copied every value of every row into its own representation first:
//! ~26 % of a Postgres list of 1,000 issues.)

use sqlx::pool::PoolConnection;

pub use crate::engine::args::{Arg, ColIdx};
use crate::engine::pg_params::{Jsonb, Param, Params, PgUuid, Timestamptz};
use crate::engine::raw::RawRow;
use sqlx::postgres::{PgConnection, PgPool, PgRow};
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Column, Postgres, Row, Sqlite, Transaction, TypeInfo, ValueRef};
use std::sync::Arc;
use tokio::sync::OwnedMutexGuard;

/// The store's connection pool: one engine, chosen by the database URL.
#[derive(Clone)]
pub enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool, Arc<Params>),
}

impl Pool {
    pub(crate) async fn acquire(&self) -> sqlx::Result<Conn> {
        Ok(match self {
            Pool::Sqlite(pool) => Conn::SqlitePooled(pool.acquire().await?),
            Pool::Postgres(pool, params) => {
                Conn::PostgresPooled(pool.acquire().await?, params.clone())
            }
        })
    }

    /// A Postgres transaction (SQLite writes go through [`crate::engine::writer`]).
    pub(crate) async fn begin_postgres(&self) -> sqlx::Result<Conn> {
        match self {
            Pool::Postgres(pool, params) => {
                Ok(Conn::PostgresTx(pool.begin().await?, params.clone()))
            }
            Pool::Sqlite(_) => unreachable!("SQLite writes go through the writer"),
        }
    }

    pub(crate) async fn close(&self) {
        match self {
            Pool::Sqlite(pool) => pool.close().await,
            Pool::Postgres(pool, _) => pool.close().await,
        }
    }
}

/// One connection taken from the pool: inside a transaction or not.
pub enum Conn {
    /// A write transaction on SQLite: a savepoint on the one writer.
    SqliteWriter(OwnedMutexGuard<crate::engine::writer::Slot>),
    PostgresTx(Transaction<'static, Postgres>, Arc<Params>),
    SqlitePooled(PoolConnection<Sqlite>),
    PostgresPooled(PoolConnection<Postgres>, Arc<Params>),
}

impl Conn {
    pub(crate) fn backend(&self) -> crate::Backend {
        match self {
            Conn::SqliteWriter(_) | Conn::SqlitePooled(_) => crate::Backend::Sqlite,
            Conn::PostgresTx(..) | Conn::PostgresPooled(..) => crate::Backend::Postgres,
        }
    }

    pub(crate) async fn commit(self) -> sqlx::Result<()> {
        match self {
            Conn::SqliteWriter(slot) => crate::engine::writer::commit(slot).await,
            Conn::PostgresTx(tx, _) => tx.commit().await,
            Conn::SqlitePooled(_) | Conn::PostgresPooled(..) => Ok(()),
        }
    }

    pub(crate) async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Conn::SqliteWriter(slot) => crate::engine::writer::rollback(slot).await,
            Conn::PostgresTx(tx, _) => tx.rollback().await,
            Conn::SqlitePooled(_) | Conn::PostgresPooled(..) => Ok(()),
        }
    }

    /// Runs a script of several statements (a migration), without binds.
    pub(crate) async fn run_script(&mut self, sql: &str) -> sqlx::Result<()> {
        match (&mut *self).target() {
            Target::SqliteRaw(conn) => conn.script(sql),
            Target::Sqlite(conn) => sqlx::raw_sql(sql).execute(conn).await.map(drop),
            Target::Postgres(conn, _) => sqlx::raw_sql(sql).execute(conn).await.map(drop),
            Target::SqlitePool(_) | Target::PostgresPool(..) => unreachable!("a connection"),
        }
    }
}

/// Where a query runs: the pool (any free connection) or one connection.
pub enum Target<'e> {
    SqlitePool(&'e SqlitePool),
    PostgresPool(&'e PgPool, &'e Params),
    Sqlite(&'e mut SqliteConnection),
    Postgres(&'e mut PgConnection, &'e Params),
    /// The SQLite writer's connection (see [`crate::engine::raw_conn`]).
    SqliteRaw(&'e mut crate::engine::raw_conn::RawConn),
}

/// What a query can run on: `store.pool()`, `tx.conn()` or a pooled `Conn`.
pub trait Exec<'e> {
    fn target(self) -> Target<'e>;
}

impl<'e> Exec<'e> for Target<'e> {
    fn target(self) -> Target<'e> {
        self
    }
}

impl<'e> Exec<'e> for &'e Pool {
    fn target(self) -> Target<'e> {
        match self {
            Pool::Sqlite(pool) => Target::SqlitePool(pool),
            Pool::Postgres(pool, params) => Target::PostgresPool(pool, params),
        }
    }
}

impl<'e> Exec<'e> for &'e mut Conn {
    fn target(self) -> Target<'e> {
        match self {
            Conn::SqliteWriter(slot) => Target::SqliteRaw(&mut slot.conn),
            Conn::PostgresTx(tx, params) => Target::Postgres(tx, params),
            Conn::SqlitePooled(conn) => Target::Sqlite(conn),
            Conn::PostgresPooled(conn, params) => Target::Postgres(conn, params),
        }
    }
}

/// A statement with its binds, run on either engine.
pub struct Query<'q> {
    sql: &'q str,
    args: Vec<Arg<'q>>,
}

pub fn query(sql: &str) -> Query<'_> {
    Query {
        sql,
        args: Vec::new(),
    }
}

/// A statement whose rows decode into `O` (a tuple of columns).
pub struct QueryAs<'q, O> {
    inner: Query<'q>,
    out: std::marker::PhantomData<fn() -> O>,
}

pub fn query_as<O: FromDbRow>(sql: &str) -> QueryAs<'_, O> {
    QueryAs {
        inner: query(sql),
        out: std::marker::PhantomData,
    }
}

/// Rows changed by a statement.
pub struct Done(u64);

impl Done {
    pub fn rows_affected(&self) -> u64 {
        self.0
    }
}

macro_rules! on_engine {
    ($query:expr, $target:expr, |$q:ident, $on:ident| $body:expr) => {
        match $target {
            Target::SqlitePool($on) => {
                let $q = $query.sqlite();
                $body
            }
            Target::Sqlite($on) => {
                let $q = $query.sqlite();
                $body
            }
            Target::PostgresPool($on, params) => {
                let $q = $query.postgres(params).await;
                $body
            }
            Target::Postgres($on, params) => {
                let $q = $query.postgres(params).await;
                $body
            }
            Target::SqliteRaw(_) => unreachable!("the writer's queries run before"),
        }
    };
}

impl<'q> Query<'q> {
    pub fn bind(mut self, value: impl Into<Arg<'q>>) -> Self {
        self.args.push(value.into());
        self
    }

    fn sqlite(self) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments<'q>> {
        let mut q = sqlx::query(self.sql);
        for arg in self.args {
            q = match arg {
                Arg::Text(v) => q.bind(v),
                Arg::Int(v) => q.bind(v),
                Arg::Bool(v) => q.bind(v),
                Arg::Real(v) => q.bind(v),
            };
        }
        q
    }

    /// Each bind's own Postgres type.
    fn own_types(&self) -> Vec<sqlx::postgres::PgTypeInfo> {
        self.args
            .iter()
            .map(|arg| match arg {
                Arg::Text(_) => <String as sqlx::Type<Postgres>>::type_info(),
                Arg::Int(_) => <i64 as sqlx::Type<Postgres>>::type_info(),
                Arg::Bool(_) => <bool as sqlx::Type<Postgres>>::type_info(),
                Arg::Real(_) => <f64 as sqlx::Type<Postgres>>::type_info(),
            })
            .collect()
    }

    /// The statement with its binds, each converted to the type Postgres
    /// gives its parameter where that is a native one (see
    /// [`crate::engine::pg_params`]).
    async fn postgres(
        self,
        params: &Params,
    ) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
        let types = params
            .of(self.sql, self.args.len(), || self.own_types())
            .await;
        let types = types.as_deref();
        // A full-text condition costs what its words match. A named statement
        // is planned generically after five runs, its words unknown and
        // guessed rare: a page of a common word then gathered all its 83,000
        // matches to sort them (560 ms, against 9 ms walking the company's
        // tasks). Unnamed, each search is planned with its own words.
        let persistent = !self.sql.contains("to_tsquery(");
        let mut q = sqlx::query(self.sql).persistent(persistent);
        for (i, arg) in self.args.into_iter().enumerate() {
            let param = types.and_then(|t| t.get(i)).copied().unwrap_or(Param::Same);
            q = match (arg, param) {
                (Arg::Text(v), Param::Json) => q.bind(v.map(Jsonb)),
                (Arg::Text(v), Param::Time) => q.bind(v.and_then(|t| Timestamptz::parse(&t))),
                (Arg::Text(v), Param::Uuid) => q.bind(v.map(|t| PgUuid::parse(&t))),
                (Arg::Int(v), Param::Bool) => q.bind(v.map(|n| n != 0)),
                (Arg::Text(v), _) => q.bind(v),
                (Arg::Int(v), _) => q.bind(v),
                (Arg::Bool(v), _) => q.bind(v),
                (Arg::Real(v), _) => q.bind(v),
            };
        }
        q
    }

    pub async fn fetch_all<'e>(self, on: impl Exec<'e>) -> sqlx::Result<Vec<DbRow>> {
        match on.target() {
            Target::SqliteRaw(conn) => owned(conn.fetch_owned(self.sql, &self.args, None)?),
            target => on_engine!(self, target, |q, on| Ok(wrap(q.fetch_all(on).await?))),
        }
    }

    // A DML statement's changes all happen at its first step (SQLite runs
    // `INSERT ... RETURNING` whole, then hands out the rows), so reading one
    // row of it is enough.
    pub async fn fetch_optional<'e>(self, on: impl Exec<'e>) -> sqlx::Result<Option<DbRow>> {
        match on.target() {
            Target::SqliteRaw(conn) => {
                Ok(owned(conn.fetch_owned(self.sql, &self.args, Some(1))?)?.pop())
            }
            target => on_engine!(self, target, |q, on| Ok(q
                .fetch_optional(on)
                .await?
                .map(DbRow::from))),
        }
    }

    pub async fn fetch_one<'e>(self, on: impl Exec<'e>) -> sqlx::Result<DbRow> {
        match on.target() {
            Target::SqliteRaw(conn) => owned(conn.fetch_owned(self.sql, &self.args, Some(1))?)?
                .pop()
                .ok_or(sqlx::Error::RowNotFound),
            target => on_engine!(self, target, |q, on| Ok(q.fetch_one(on).await?.into())),
        }
    }

    /// All rows, each mapped as it is read: on SQLite straight from the
    /// statement (see [`crate::engine::raw`]), on Postgres from its rows. Pass the
    /// same generic mapper twice (`.fetch_map(on, map, map)`).
    pub(crate) async fn fetch_map<'e, T>(
        self,
        on: impl Exec<'e>,
        raw: fn(&RawRow) -> crate::Result<T>,
        row: fn(&DbRow) -> crate::Result<T>,
    ) -> crate::Result<Vec<T>> {
        match on.target() {
            Target::SqlitePool(pool) => {
                let mut conn = pool.acquire().await?;
                crate::engine::raw::fetch_map(&mut conn, self.sql, &self.args, raw).await
            }
            Target::Sqlite(conn) => {
                crate::engine::raw::fetch_map(conn, self.sql, &self.args, raw).await
            }
            Target::SqliteRaw(conn) => {
                let mut out = Vec::new();
                conn.run(self.sql, &self.args, &mut |r| {
                    out.push(raw(r)?);
                    Ok(true)
                })?;
                Ok(out)
            }
            target => self.fetch_all(target).await?.iter().map(row).collect(),
        }
    }

    pub async fn execute<'e>(self, on: impl Exec<'e>) -> sqlx::Result<Done> {
        match on.target() {
            Target::SqliteRaw(conn) => match conn.run(self.sql, &self.args, &mut |_| Ok(true)) {
                Ok(()) => Ok(Done(conn.changes())),
                Err(crate::Error::Database(err)) => Err(err),
                Err(other) => Err(sqlx::Error::Protocol(other.to_string())),
            },
            target => on_engine!(self, target, |q, on| Ok(Done(
                q.execute(on).await?.rows_affected()
            ))),
        }
    }
}

fn owned(rows: Vec<crate::engine::raw_conn::OwnedRow>) -> sqlx::Result<Vec<DbRow>> {
    Ok(rows.into_iter().map(DbRow::Owned).collect())
}

fn wrap<R: Into<DbRow>>(rows: Vec<R>) -> Vec<DbRow> {
    rows.into_iter().map(Into::into).collect()
}

impl<'q, O: FromDbRow> QueryAs<'q, O> {
    pub fn bind(mut self, value: impl Into<Arg<'q>>) -> Self {
        self.inner = self.inner.bind(value);
        self
    }

    pub async fn fetch_all<'e>(self, on: impl Exec<'e>) -> sqlx::Result<Vec<O>> {
        let rows = self.inner.fetch_all(on).await?;
        rows.iter().map(O::from_row).collect()
    }

    pub async fn fetch_optional<'e>(self, on: impl Exec<'e>) -> sqlx::Result<Option<O>> {
        let row = self.inner.fetch_optional(on).await?;
        row.as_ref().map(O::from_row).transpose()
    }

    pub async fn fetch_one<'e>(self, on: impl Exec<'e>) -> sqlx::Result<O> {
        O::from_row(&self.inner.fetch_one(on).await?)
    }
}

/// A row of either engine, decoded in place.
pub enum DbRow {
    Sqlite(SqliteRow),
    Postgres(PgRow),
    /// A row the SQLite writer read (kept past its statement).
    Owned(crate::engine::raw_conn::OwnedRow),
}

impl From<SqliteRow> for DbRow {
    fn from(row: SqliteRow) -> DbRow {
        DbRow::Sqlite(row)
    }
}

impl From<PgRow> for DbRow {
    fn from(row: PgRow) -> DbRow {
        DbRow::Postgres(row)
    }
}

impl DbRow {
    pub fn try_get<T: Col, I: ColIdx>(&self, col: I) -> sqlx::Result<T> {
        T::get(self, col)
    }
}

/// A value decodable from a column on both engines.
pub trait Col: Sized {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<Self>;
}

impl Col for String {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<String> {
        match row {
            DbRow::Owned(r) => {
                Option::<String>::from_owned(r.value(col)?)?.ok_or_else(|| null(col))
            }
            DbRow::Sqlite(r) => r.try_get(col),
            DbRow::Postgres(_) => Option::<String>::get(row, col)?.ok_or_else(|| null(col)),
        }
    }
}

impl Col for Option<String> {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<Option<String>> {
        match row {
            DbRow::Owned(r) => Option::<String>::from_owned(r.value(col)?),
            DbRow::Sqlite(r) => r.try_get(col),
            // JSON, times and ids are native on Postgres; the store reads
            // them as the text SQLite keeps.
            DbRow::Postgres(r) => match r.try_column(col)?.type_info().name() {
                name @ ("JSONB" | "JSON" | "TIMESTAMPTZ" | "UUID") => {
                    let value = r.try_get_raw(col)?;
                    if value.is_null() {
                        return Ok(None);
                    }
                    let bytes = value.as_bytes().map_err(sqlx::Error::Decode)?;
                    match name {
                        "TIMESTAMPTZ" => crate::engine::pg_params::time_text(bytes).map(Some),
                        "UUID" => crate::engine::pg_params::uuid_text(bytes).map(Some),
                        _ => crate::engine::pg_params::json_text(name, bytes).map(Some),
                    }
                }
                _ => r.try_get(col),
            },
        }
    }
}

impl Col for Option<i64> {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<Option<i64>> {
        match row {
            DbRow::Owned(r) => Option::<i64>::from_owned(r.value(col)?),
            DbRow::Sqlite(r) => r.try_get(col),
            // Every integer column is BIGINT, but an expression (a literal,
            // `COUNT` in a subquery, a `CASE`) may come back narrower; a flag
            // is `boolean` on Postgres and 0/1 on SQLite.
            DbRow::Postgres(r) => match r.try_column(col)?.type_info().name() {
                "INT4" => Ok(r.try_get::<Option<i32>, _>(col)?.map(i64::from)),
                "INT2" => Ok(r.try_get::<Option<i16>, _>(col)?.map(i64::from)),
                "BOOL" => Ok(r.try_get::<Option<bool>, _>(col)?.map(i64::from)),
                _ => r.try_get(col),
            },
        }
    }
}

impl Col for i64 {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<i64> {
        match row {
            DbRow::Owned(r) => Option::<i64>::from_owned(r.value(col)?)?.ok_or_else(|| null(col)),
            DbRow::Sqlite(r) => r.try_get(col),
            DbRow::Postgres(_) => {
                Option::<i64>::get(row, col)?.ok_or_else(|| sqlx::Error::ColumnDecode {
                    index: format!("{col:?}"),
                    source: "unexpected NULL".into(),
                })
            }
        }
    }
}

impl Col for Option<f64> {
    fn get<I: ColIdx>(row: &DbRow, col: I) -> sqlx::Result<Option<f64>> {
        match row {
            DbRow::Owned(r) => Option::<f64>::from_owned(r.value(col)?),
            DbRow::Sqlite(r) => r.try_get(col),
            DbRow::Postgres(r) => r.try_get(col),
        }
    }
}

fn null<I: ColIdx>(col: I) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: format!("{col:?}"),
        source: "unexpected NULL".into(),
    }
}

/// A value of the writer's rows as SQLite's own conversions give it (as
/// `sqlite3_column_*` would), or an error where none applies.
trait FromOwned: Sized {
    fn from_owned(value: &crate::engine::raw_conn::Owned) -> sqlx::Result<Self>;
}

fn mismatch(what: &str, value: &crate::engine::raw_conn::Owned) -> sqlx::Error {
    sqlx::Error::Decode(format!("expected {what}, found {value:?}").into())
}

impl FromOwned for Option<String> {
    fn from_owned(value: &crate::engine::raw_conn::Owned) -> sqlx::Result<Self> {
        use crate::engine::raw_conn::Owned;
        Ok(match value {
            Owned::Null => None,
            Owned::Text(s) => Some(s.clone()),
            Owned::Int(n) => Some(n.to_string()),
            Owned::Real(x) => Some(x.to_string()),
        })
    }
}

impl FromOwned for Option<i64> {
    fn from_owned(value: &crate::engine::raw_conn::Owned) -> sqlx::Result<Self> {
        use crate::engine::raw_conn::Owned;
        match value {
            Owned::Null => Ok(None),
            Owned::Int(n) => Ok(Some(*n)),
            other => Err(mismatch("an integer", other)),
        }
    }
}

impl FromOwned for Option<f64> {
    fn from_owned(value: &crate::engine::raw_conn::Owned) -> sqlx::Result<Self> {
        use crate::engine::raw_conn::Owned;
        match value {
            Owned::Null => Ok(None),
            Owned::Real(x) => Ok(Some(*x)),
            Owned::Int(n) => Ok(Some(*n as f64)),
            other => Err(mismatch("a number", other)),
        }
    }
}

/// Rows of `query_as`: tuples of columns read by position.
pub trait FromDbRow: Sized {
    fn from_row(row: &DbRow) -> sqlx::Result<Self>;
}

impl<A: Col> FromDbRow for (A,) {
    fn from_row(row: &DbRow) -> sqlx::Result<Self> {
        Ok((A::get(row, 0)?,))
    }
}

impl<A: Col, B: Col> FromDbRow for (A, B) {
    fn from_row(row: &DbRow) -> sqlx::Result<Self> {
        Ok((A::get(row, 0)?, B::get(row, 1)?))
    }
}

impl<A: Col, B: Col, C: Col> FromDbRow for (A, B, C) {
    fn from_row(row: &DbRow) -> sqlx::Result<Self> {
        Ok((A::get(row, 0)?, B::get(row, 1)?, C::get(row, 2)?))
    }
}
