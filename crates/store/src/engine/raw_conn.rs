//! The writer's own SQLite connection, driven through SQLite's C API on the
//! calling thread.
//!
//! A write through sqlx-sqlite is a round trip to the connection's worker
//! thread per statement: a create's eight statements were eight hand-offs
//! while the writer was held, and the two cores sat idle 60 % of the time
//! under sixteen writers, waiting on them. The writer's statements are short
//! and run one at a time anyway, so they run where the transaction's task
//! runs, on a connection only the writer holds ([`crate::engine::writer`]), with
//! prepared statements kept for reuse as sqlx keeps them.

use std::collections::HashMap;
use std::ffi::{c_int, CStr, CString};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use libsqlite3_sys as ffi;

use crate::engine::args::Arg;
use crate::engine::raw::{bind_and_step, error, prepare, RawRow};

/// Statements kept prepared; past this many the cache starts over (the
/// store has about a hundred distinct writes).
const CACHED: usize = 512;

pub struct RawConn {
    db: NonNull<ffi::sqlite3>,
    statements: HashMap<String, NonNull<ffi::sqlite3_stmt>>,
}

// SAFETY: the connection is opened in multi-thread mode and used by one
// thread at a time: its owner is behind the writer's mutex.
unsafe impl Send for RawConn {}

impl RawConn {
    pub(crate) fn open(path: &Path, settings: &str) -> sqlx::Result<RawConn> {
        let name = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| sqlx::Error::Protocol("a database path with a NUL byte".into()))?;
        let mut db = ptr::null_mut();
        let flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE | ffi::SQLITE_OPEN_NOMUTEX;
        // SAFETY: `name` is a C string; `db` is closed below on failure and
        // by `Drop` otherwise.
        let rc = unsafe { ffi::sqlite3_open_v2(name.as_ptr(), &mut db, flags, ptr::null()) };
        let Some(db) = NonNull::new(db) else {
            return Err(sqlx::Error::Protocol("sqlite: out of memory".into()));
        };
        let mut conn = RawConn {
            db,
            statements: HashMap::new(),
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(conn.db.as_ptr()));
        }
        // SAFETY: an open connection.
        unsafe { ffi::sqlite3_extended_result_codes(conn.db.as_ptr(), 1) };
        conn.script(settings)?;
        Ok(conn)
    }

    /// Runs statements without parameters (a migration, `BEGIN`, `COMMIT`).
    pub(crate) fn script(&mut self, sql: &str) -> sqlx::Result<()> {
        let sql = CString::new(sql)
            .map_err(|_| sqlx::Error::Protocol("a script with a NUL byte".into()))?;
        // SAFETY: an open connection only we use; no callback.
        let rc = unsafe {
            ffi::sqlite3_exec(
                self.db.as_ptr(),
                sql.as_ptr(),
                None,
                ptr::null_mut(),
                ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(self.db.as_ptr()));
        }
        Ok(())
    }

    /// Runs `sql` with `args`, handing each row to `each` until it answers
    /// `false`; the statement is kept prepared for the next time.
    pub(crate) fn run(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        each: &mut dyn FnMut(&RawRow) -> crate::Result<bool>,
    ) -> crate::Result<()> {
        let db = self.db.as_ptr();
        let stmt = match self.statements.get(sql) {
            Some(stmt) => *stmt,
            None => {
                if self.statements.len() >= CACHED {
                    self.finalize_all();
                }
                // SAFETY: an open connection only we use.
                let stmt = unsafe { prepare(db, sql)? };
                self.statements.insert(sql.to_string(), stmt);
                stmt
            }
        };
        // SAFETY: `stmt` belongs to `db` and was reset after its last use.
        let result = unsafe { bind_and_step(db, stmt, args, each) };
        // Reset however the run ended: a statement left mid-way would hold
        // its read of the database open.
        // SAFETY: as above.
        unsafe {
            ffi::sqlite3_reset(stmt.as_ptr());
            ffi::sqlite3_clear_bindings(stmt.as_ptr());
        }
        result
    }

    /// Rows changed by the last statement.
    pub(crate) fn changes(&self) -> u64 {
        // SAFETY: an open connection.
        unsafe { ffi::sqlite3_changes64(self.db.as_ptr()) as u64 }
    }

    /// Runs `sql` and keeps its rows, decoded by kind.
    pub(crate) fn fetch_owned(
        &mut self,
        sql: &str,
        args: &[Arg<'_>],
        limit: Option<usize>,
    ) -> sqlx::Result<Vec<OwnedRow>> {
        let mut rows = Vec::new();
        let mut names: Option<Arc<[String]>> = None;
        let ran = self.run(sql, args, &mut |row| {
            let names = names.get_or_insert_with(|| row.column_names().into());
            rows.push(OwnedRow {
                names: names.clone(),
                values: row.owned_values(),
            });
            Ok(limit.is_none_or(|n| rows.len() < n))
        });
        match ran {
            Ok(()) => Ok(rows),
            Err(crate::Error::Database(err)) => Err(err),
            Err(other) => Err(sqlx::Error::Protocol(other.to_string())),
        }
    }

    fn finalize_all(&mut self) {
        for (_, stmt) in self.statements.drain() {
            // SAFETY: each statement was prepared on this connection once.
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
        }
    }
}

impl Drop for RawConn {
    fn drop(&mut self) {
        self.finalize_all();
        // SAFETY: every statement is finalized; closing rolls back an open
        // transaction (a group nobody committed is not acknowledged to
        // anyone).
        unsafe { ffi::sqlite3_close(self.db.as_ptr()) };
    }
}

/// A value as SQLite stored it.
#[derive(Debug, Clone)]
pub enum Owned {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

/// A result row kept past its statement (the writer's `fetch_*`).
#[derive(Debug, Clone)]
pub struct OwnedRow {
    names: Arc<[String]>,
    values: Vec<Owned>,
}

impl OwnedRow {
    pub(crate) fn value<I: crate::engine::args::ColIdx>(&self, col: I) -> sqlx::Result<&Owned> {
        let at = col.position(|name| self.names.iter().position(|n| n == name))?;
        self.values
            .get(at)
            .ok_or(sqlx::Error::ColumnIndexOutOfBounds {
                index: at,
                len: self.values.len(),
            })
    }
}

impl RawRow {
    fn column_names(&self) -> Vec<String> {
        // SAFETY: column metadata of the live statement.
        unsafe {
            let count = ffi::sqlite3_column_count(self.stmt_ptr());
            (0..count)
                .map(|i| {
                    CStr::from_ptr(ffi::sqlite3_column_name(self.stmt_ptr(), i))
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        }
    }

    fn owned_values(&self) -> Vec<Owned> {
        let p = self.stmt_ptr();
        // SAFETY: columns of the current row, read before the next step.
        unsafe {
            let count: c_int = ffi::sqlite3_column_count(p);
            (0..count)
                .map(|i| match ffi::sqlite3_column_type(p, i) {
                    ffi::SQLITE_INTEGER => Owned::Int(ffi::sqlite3_column_int64(p, i)),
                    ffi::SQLITE_FLOAT => Owned::Real(ffi::sqlite3_column_double(p, i)),
                    ffi::SQLITE_NULL => Owned::Null,
                    _ => {
                        let text = ffi::sqlite3_column_text(p, i);
                        let len = ffi::sqlite3_column_bytes(p, i) as usize;
                        if text.is_null() {
                            Owned::Text(String::new())
                        } else {
                            let bytes = std::slice::from_raw_parts(text, len);
                            Owned::Text(String::from_utf8_lossy(bytes).into_owned())
                        }
                    }
                })
                .collect()
        }
    }
}
