//! Versioned migrations, applied at start. The same SQL runs on both engines.
//! Applied versions are recorded in `schema_migrations`; a migration runs in
//! a transaction with its record, so a failed start leaves nothing half-done.

use sqlx::Executor;

use crate::Store;

const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "core", include_str!("../migrations/0001_core.sql")),
    (2, "runtime", include_str!("../migrations/0002_runtime.sql")),
    (
        3,
        "governance",
        include_str!("../migrations/0003_governance.sql"),
    ),
    (
        4,
        "sessions",
        include_str!("../migrations/0004_sessions.sql"),
    ),
    (
        5,
        "one_queued_run",
        include_str!("../migrations/0005_one_queued_run.sql"),
    ),
    (
        6,
        "run_follow_up",
        include_str!("../migrations/0006_run_follow_up.sql"),
    ),
];

pub(crate) async fn run(store: &Store) -> anyhow::Result<()> {
    store
        .pool()
        .execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (\
             version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
        )
        .await?;
    for &(version, name, sql) in MIGRATIONS {
        let mut tx = store.begin().await?;
        let applied: Option<(i64,)> =
            sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(tx.conn())
                .await?;
        if applied.is_some() {
            continue;
        }
        tx.conn().execute(sqlx::raw_sql(sql)).await?;
        sqlx::query(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
        )
        .bind(version)
        .bind(name)
        .bind(crate::now())
        .execute(tx.conn())
        .await?;
        tx.commit().await?;
        tracing::info!(version, name, "applied migration");
    }
    Ok(())
}

/// The highest migration version this build knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map(|m| m.0).unwrap_or(0)
}
