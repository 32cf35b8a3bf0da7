//! The SQL half of automatic database backups (the runtime's `backups`
//! schedules them, names the files and keeps the newest).

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use crate::engine::db;
use crate::{Result, Store};

/// Writes a consistent, compacted copy of the SQLite database at `db` into
/// `out` (which must not exist): `VACUUM INTO` copies one snapshot while
/// writers go on (WAL). A connection of its own, so `paperclip db backup`
/// neither migrates the database nor needs the server. Postgres is dumped
/// with `pg_dump` by the caller instead.
pub async fn sqlite_copy(db: &Path, out: &Path) -> Result<()> {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(false)
        .busy_timeout(Duration::from_secs(10))
        .connect()
        .await?;
    sqlx::query("VACUUM INTO ?1")
        .bind(out.to_string_lossy().into_owned())
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    Ok(())
}

/// Whether the instance holds anything worth a backup yet (a company).
pub async fn holds_data(store: &Store) -> Result<bool> {
    Ok(db::query("SELECT id FROM companies LIMIT 1")
        .fetch_optional(store.pool())
        .await?
        .is_some())
}
