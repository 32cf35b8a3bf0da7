//! The channel live events cross instances on: Postgres `LISTEN/NOTIFY`.
//! A notification carries one event; one larger than NOTIFY's payload
//! bound is kept in `live_event_spill` and the notification names it. On
//! SQLite there is one instance and no bus.

use std::time::Duration;

pub use sqlx::postgres::PgListener as Listener;
use sqlx::postgres::{PgListener, PgPool};
use sqlx::Connection;

use crate::engine::db::Pool;
use crate::{Result, Store};

/// The channel every instance listens on.
pub const CHANNEL: &str = "paperclip_live";
/// The most a notification carries (Postgres refuses 8000 bytes and more).
pub const MAX_PAYLOAD: usize = 7900;
/// How long a spilled event is kept for instances to read.
const SPILL_KEEP: Duration = Duration::from_secs(300);

fn pg(store: &Store) -> Option<&PgPool> {
    match store.pool() {
        Pool::Postgres(pool, _) => Some(pool),
        Pool::Sqlite(_) => None,
    }
}

/// Sends notifications in order on one connection of its own.
pub struct Sender {
    conn: sqlx::postgres::PgConnection,
    store: Store,
}

/// `None` on SQLite.
pub async fn sender(store: &Store) -> Result<Option<Sender>> {
    let Some(pool) = pg(store) else {
        return Ok(None);
    };
    let options = pool.connect_options();
    let conn = sqlx::postgres::PgConnection::connect_with(&options).await?;
    Ok(Some(Sender {
        conn,
        store: store.clone(),
    }))
}

impl Sender {
    /// Sends `payload` (a JSON object); one too large for a notification is
    /// spilled and sent as `{"o": origin, "ref": id}`.
    pub async fn send(&mut self, origin: &str, payload: &str) -> Result<()> {
        let body = if payload.len() <= MAX_PAYLOAD {
            payload.to_string()
        } else {
            let id = crate::new_id();
            crate::engine::db::query(
                "INSERT INTO live_event_spill (id, body, created_at) VALUES ($1, $2, $3)",
            )
            .bind(&id)
            .bind(payload)
            .bind(crate::now())
            .execute(self.store.pool())
            .await?;
            serde_json::json!({ "o": origin, "ref": id }).to_string()
        };
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(body)
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }
}

/// Listens on [`CHANNEL`]; `None` on SQLite. The listener reconnects on its
/// own after a lost connection (notifications sent meanwhile are missed).
pub async fn listener(store: &Store) -> Result<Option<PgListener>> {
    let Some(pool) = pg(store) else {
        return Ok(None);
    };
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(Some(listener))
}

/// A spilled event's body (`None` once swept).
pub async fn spilled(store: &Store, id: &str) -> Result<Option<String>> {
    let row: Option<(String,)> =
        crate::engine::db::query_as("SELECT body FROM live_event_spill WHERE id = $1")
            .bind(id)
            .fetch_optional(store.pool())
            .await?;
    Ok(row.map(|r| r.0))
}

/// Deletes spilled events older than every reader needs.
pub async fn sweep_spill(store: &Store) -> Result<u64> {
    let cutoff = (chrono::Utc::now() - chrono::Duration::from_std(SPILL_KEEP).unwrap_or_default())
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let n = crate::engine::db::query("DELETE FROM live_event_spill WHERE created_at < $1")
        .bind(cutoff)
        .execute(store.pool())
        .await?
        .rows_affected();
    Ok(n)
}
