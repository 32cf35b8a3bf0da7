//! Large reads on SQLite straight from the statement, for the hot pages
//! (lists of up to a thousand tasks).
//!
//! sqlx-sqlite hands every result row from the connection's worker thread to
//! the reader through a channel, as a copy of each of its values
//! (`sqlite3_value_dup`) that the reader frees again: for a page of 1,000
//! tasks, 26,000 copies, 1,000 thread hand-offs and most of the request's
//! time. Here the reader takes the connection's handle from sqlx
//! (`lock_handle`, the worker waits meanwhile), steps the statement itself and
//! decodes each column in place into the typed row. Only `SELECT`s come here;
//! writes keep going through sqlx.

use std::ffi::{c_char, c_int, CStr};
use std::ptr::{self, NonNull};

use libsqlite3_sys as ffi;
use serde_json::Value;
use sqlx::sqlite::SqliteConnection;

use crate::engine::args::{Arg, ColIdx};

/// A row being read: valid only inside the mapper it is passed to.
pub struct RawRow {
    stmt: NonNull<ffi::sqlite3_stmt>,
}

/// Finalizes the statement however the read ends.
struct Statement(NonNull<ffi::sqlite3_stmt>);

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared by us and is finalized once.
        unsafe { ffi::sqlite3_finalize(self.0.as_ptr()) };
    }
}

/// SQLite's error on `db` as a database error, with its extended code, so
/// callers can tell a unique violation as they do on sqlx's errors.
pub(crate) fn error(db: *mut ffi::sqlite3) -> sqlx::Error {
    // SAFETY: `db` is the open connection; the message is copied at once.
    let (code, message) = unsafe {
        (
            ffi::sqlite3_extended_errcode(db),
            CStr::from_ptr(ffi::sqlite3_errmsg(db))
                .to_string_lossy()
                .into_owned(),
        )
    };
    sqlx::Error::Database(Box::new(SqliteError { code, message }))
}

#[derive(Debug)]
struct SqliteError {
    code: c_int,
    message: String,
}

impl std::fmt::Display for SqliteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(code: {}) {}", self.code, self.message)
    }
}

impl std::error::Error for SqliteError {}

impl sqlx::error::DatabaseError for SqliteError {
    fn message(&self) -> &str {
        &self.message
    }
    fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(self.code.to_string().into())
    }
    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }
    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }
    fn kind(&self) -> sqlx::error::ErrorKind {
        use sqlx::error::ErrorKind;
        match self.code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                ErrorKind::UniqueViolation
            }
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

/// Prepares `sql` on `db`; the caller finalizes the statement.
///
/// # Safety
/// `db` is an open connection nobody else uses meanwhile.
pub(crate) unsafe fn prepare(
    db: *mut ffi::sqlite3,
    sql: &str,
) -> sqlx::Result<NonNull<ffi::sqlite3_stmt>> {
    let len =
        c_int::try_from(sql.len()).map_err(|_| sqlx::Error::Protocol("sql too long".into()))?;
    let mut stmt = ptr::null_mut();
    let rc = ffi::sqlite3_prepare_v2(
        db,
        sql.as_ptr() as *const c_char,
        len,
        &mut stmt,
        ptr::null_mut(),
    );
    if rc != ffi::SQLITE_OK {
        return Err(error(db));
    }
    NonNull::new(stmt).ok_or_else(|| sqlx::Error::Protocol("sqlite: an empty statement".into()))
}

/// Binds `args` to `$1, $2, ...` of `stmt`, then steps it, handing each row
/// to `each` until it answers `false` or the rows end.
///
/// # Safety
/// `stmt` is a statement of `db`, freshly prepared or reset, and `db` is
/// used by nobody else meanwhile.
pub(crate) unsafe fn bind_and_step(
    db: *mut ffi::sqlite3,
    stmt: NonNull<ffi::sqlite3_stmt>,
    args: &[Arg<'_>],
    each: &mut dyn FnMut(&RawRow) -> crate::Result<bool>,
) -> crate::Result<()> {
    let p = stmt.as_ptr();
    // SQLite numbers `$n` parameters by where they first appear in the text,
    // not by their digits (`... $2 ... $1` makes `$2` the first): bind each
    // by its name, as sqlx does.
    for at in 1..=ffi::sqlite3_bind_parameter_count(p) {
        let name = ffi::sqlite3_bind_parameter_name(p, at);
        let number = if name.is_null() {
            Some(at as usize)
        } else {
            CStr::from_ptr(name)
                .to_str()
                .ok()
                .and_then(|n| n.get(1..))
                .and_then(|digits| digits.parse::<usize>().ok())
        };
        let arg = number
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| args.get(n))
            .ok_or_else(|| {
                sqlx::Error::Protocol(format!("sqlite: no argument for parameter {at}"))
            })?;
        // Text is copied by SQLite (SQLITE_TRANSIENT) before the call returns.
        let rc = match arg {
            Arg::Text(Some(s)) => ffi::sqlite3_bind_text(
                p,
                at,
                s.as_ptr() as *const c_char,
                s.len() as c_int,
                ffi::SQLITE_TRANSIENT(),
            ),
            Arg::Int(Some(n)) => ffi::sqlite3_bind_int64(p, at, *n),
            Arg::Bool(b) => ffi::sqlite3_bind_int64(p, at, i64::from(*b)),
            Arg::Real(Some(x)) => ffi::sqlite3_bind_double(p, at, *x),
            Arg::Text(None) | Arg::Int(None) | Arg::Real(None) => ffi::sqlite3_bind_null(p, at),
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db).into());
        }
    }
    let row = RawRow { stmt };
    loop {
        match ffi::sqlite3_step(p) {
            ffi::SQLITE_ROW => {
                if !each(&row)? {
                    return Ok(());
                }
            }
            ffi::SQLITE_DONE => return Ok(()),
            _ => return Err(error(db).into()),
        }
    }
}

/// Runs `sql` with `args` on `conn` and maps every row.
pub(crate) async fn fetch_map<T>(
    conn: &mut SqliteConnection,
    sql: &str,
    args: &[Arg<'_>],
    map: impl Fn(&RawRow) -> crate::Result<T>,
) -> crate::Result<Vec<T>> {
    let mut out = Vec::new();
    step_rows(conn, sql, args, |row| {
        out.push(map(row)?);
        Ok(true)
    })
    .await?;
    Ok(out)
}

/// Runs `sql` with `args` on `conn` and hands each row to `each` until it
/// answers `false` or the rows end. Stopping early is safe here (the
/// statement is ours and finalized), unlike a sqlx stream dropped part way.
pub(crate) async fn step_rows(
    conn: &mut SqliteConnection,
    sql: &str,
    args: &[Arg<'_>],
    mut each: impl FnMut(&RawRow) -> crate::Result<bool>,
) -> crate::Result<()> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    let mut read = || -> crate::Result<()> {
        // SAFETY: `db` stays locked for us until `handle` drops, after this
        // closure; the statement is finalized by `Statement` on every path.
        unsafe {
            let stmt = Statement(prepare(db, sql)?);
            bind_and_step(db, stmt.0, args, &mut each)
        }
    };
    // Stepping a page is a millisecond or two of CPU: let the runtime move
    // other tasks off this worker meanwhile (not possible, nor needed, on a
    // single-threaded runtime such as a store test's).
    let multi = tokio::runtime::Handle::try_current()
        .map(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
        .unwrap_or(false);
    let result = if multi {
        tokio::task::block_in_place(read)
    } else {
        read()
    };
    drop(handle);
    result
}

impl RawRow {
    pub(crate) fn stmt_ptr(&self) -> *mut ffi::sqlite3_stmt {
        self.stmt.as_ptr()
    }

    fn position<I: ColIdx>(&self, col: I) -> sqlx::Result<usize> {
        col.position(|name| {
            // SAFETY: column metadata of the live statement.
            let count = unsafe { ffi::sqlite3_column_count(self.stmt.as_ptr()) };
            (0..count).find_map(|i| {
                let n = unsafe { CStr::from_ptr(ffi::sqlite3_column_name(self.stmt.as_ptr(), i)) };
                (n.to_bytes() == name.as_bytes()).then_some(i as usize)
            })
        })
    }

    fn is_null(&self, at: c_int) -> bool {
        // SAFETY: a column of the current row.
        unsafe { ffi::sqlite3_column_type(self.stmt.as_ptr(), at) == ffi::SQLITE_NULL }
    }

    /// The text of a column, borrowed until the next step.
    pub(crate) fn str_at(&self, at: usize) -> sqlx::Result<Option<&str>> {
        let at = at as c_int;
        if self.is_null(at) {
            return Ok(None);
        }
        // SAFETY: text then bytes, as SQLite documents, for the current row;
        // the slice is used before the statement steps again.
        let bytes = unsafe {
            let p = ffi::sqlite3_column_text(self.stmt.as_ptr(), at);
            let n = ffi::sqlite3_column_bytes(self.stmt.as_ptr(), at);
            if p.is_null() {
                return Ok(Some(""));
            }
            std::slice::from_raw_parts(p, n as usize)
        };
        std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|e| sqlx::Error::Decode(Box::new(e)))
    }

    pub(crate) fn opt_text<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<String>> {
        Ok(self.str_at(self.position(col)?)?.map(str::to_string))
    }

    pub(crate) fn text<I: ColIdx>(&self, col: I) -> sqlx::Result<String> {
        self.opt_text(col)?.ok_or_else(|| null(col))
    }

    pub(crate) fn opt_int<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<i64>> {
        let at = self.position(col)? as c_int;
        if self.is_null(at) {
            return Ok(None);
        }
        // SAFETY: a column of the current row.
        Ok(Some(unsafe {
            ffi::sqlite3_column_int64(self.stmt.as_ptr(), at)
        }))
    }

    pub(crate) fn int<I: ColIdx>(&self, col: I) -> sqlx::Result<i64> {
        self.opt_int(col)?.ok_or_else(|| null(col))
    }

    pub(crate) fn opt_json<I: ColIdx>(&self, col: I) -> sqlx::Result<Option<Value>> {
        match self.str_at(self.position(col)?)? {
            Some(text) => serde_json::from_str(text)
                .map(Some)
                .map_err(|e| sqlx::Error::Decode(Box::new(e))),
            None => Ok(None),
        }
    }

    pub(crate) fn stored_text<I: ColIdx>(&self, col: I) -> sqlx::Result<&str> {
        self.str_at(self.position(col)?)?.ok_or_else(|| null(col))
    }
}

fn null<I: ColIdx>(col: I) -> sqlx::Error {
    sqlx::Error::ColumnDecode {
        index: format!("{col:?}"),
        source: "unexpected NULL".into(),
    }
}
