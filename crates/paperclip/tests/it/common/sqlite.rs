//! A migrated SQLite database for each fresh server, copied from a template
//! migrated once per test build, as `pg.rs` does on Postgres: migrating an
//! empty file is most of a debug server's start (~0.2 s of ~0.23 s), and the
//! suite starts hundreds of them.

use std::path::{Path, PathBuf};

use sqlx::Connection;

/// Puts a copy of the migrated template where a server on `data_dir` keeps
/// its database, before its first start.
pub async fn seed_sqlite(data_dir: &Path) {
    let template = sqlite_template().await;
    std::fs::copy(template, data_dir.join("paperclip.db")).expect("copy the SQLite template");
}

/// The template for this build's migrations (named like the Postgres one,
/// see [`super::pg::migrations_hash`]). Test processes that race to make it
/// each build their own and rename it into place: every copy is the same, and
/// a rename is atomic, so none sees half a file.
async fn sqlite_template() -> &'static Path {
    static PATH: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    PATH.get_or_init(async || {
        let dir = std::env::temp_dir();
        let path = dir.join(format!(
            "paperclip-sqlite-template-{:016x}.db",
            super::pg::migrations_hash()
        ));
        if path.exists() {
            return path;
        }
        let building = dir.join(format!(
            "paperclip-sqlite-template-{}.building",
            uuid::Uuid::new_v4().simple()
        ));
        let url = format!("sqlite://{}?mode=rwc", building.display());
        let store = paperclip_store::Store::connect(&url)
            .await
            .expect("migrate the SQLite template");
        store.close().await;
        drop(store);
        // One self-contained file: the write-ahead log folded in and off, so
        // a copy of the file alone is the whole database (the server turns
        // WAL back on when it opens it).
        let mut conn = sqlx::sqlite::SqliteConnection::connect(&url)
            .await
            .expect("open the SQLite template");
        for sql in [
            "PRAGMA wal_checkpoint(TRUNCATE)",
            "PRAGMA journal_mode = DELETE",
        ] {
            sqlx::query(sql).execute(&mut conn).await.expect(sql);
        }
        conn.close().await.expect("close the SQLite template");
        for ext in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", building.display()));
        }
        std::fs::rename(&building, &path).expect("publish the SQLite template");
        path
    })
    .await
}
