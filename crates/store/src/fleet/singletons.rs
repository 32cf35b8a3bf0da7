//! Loops that must run on one instance at a time (an hourly sweep of run
//! logs or worktrees): a named lease taken for one pass. The holder keeps it
//! by taking it again; when it dies, another instance takes it once it
//! expires.

use std::time::Duration;

use crate::{Result, Store};

/// Takes (or keeps) the lease `name` for `holder` for `hold`; `true` if this
/// instance holds it now and should do the pass.
pub async fn take(store: &Store, name: &str, holder: &str, hold: Duration) -> Result<bool> {
    let now = crate::now();
    let until = (chrono::Utc::now() + chrono::Duration::from_std(hold).unwrap_or_default())
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "INSERT INTO singleton_leases (name, holder, expires_at) VALUES ($1, $2, $3) \
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at \
         WHERE singleton_leases.holder = excluded.holder OR singleton_leases.expires_at <= $4",
    )
    .bind(name)
    .bind(holder)
    .bind(&until)
    .bind(&now)
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n == 1)
}
