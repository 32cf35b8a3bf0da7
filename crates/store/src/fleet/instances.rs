//! Instances and their leases. An instance registers under a stable id (a
//! pod's name, or an id kept in its data dir) with a new incarnation each
//! start, renews its lease every few seconds, and gives it up when it stops.
//! A run records the instance that claimed it (`owner_instance_id`); a run
//! whose owner's lease expired has lost its driver and is taken over by one
//! survivor with a conditional UPDATE.
//!
//! Leases compare times written by the instances' own clocks: instances are
//! expected to keep their clocks in sync (NTP), well within the lease.

use std::time::Duration;

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{Result, Store};

#[derive(Debug, Clone)]
pub struct Instance {
    pub id: String,
    pub incarnation: String,
    pub hostname: String,
    pub pid: i64,
    pub version: String,
    pub started_at: String,
    pub renewed_at: String,
    pub lease_expires_at: String,
    pub stopped_at: Option<String>,
}

/// A run whose driver is gone: left by this instance's previous incarnation,
/// by an instance whose lease expired, or by a binary from before instances
/// (no owner).
#[derive(Debug, Clone)]
pub struct LostRun {
    pub run_id: String,
    pub owner: Option<String>,
    /// The host its owner ran on, when known: its processes can be killed
    /// only from there.
    pub owner_hostname: Option<String>,
}

fn at(offset: Duration) -> String {
    let at = chrono::Utc::now() + chrono::Duration::from_std(offset).unwrap_or_default();
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn map(row: &DbRow) -> Result<Instance> {
    Ok(Instance {
        id: row.text("id")?,
        incarnation: row.text("incarnation")?,
        hostname: row.text("hostname")?,
        pid: row.int("pid")?,
        version: row.text("version")?,
        started_at: row.text("started_at")?,
        renewed_at: row.text("renewed_at")?,
        lease_expires_at: row.text("lease_expires_at")?,
        stopped_at: row.opt_text("stopped_at")?,
    })
}

/// Registers this start of `me` with a lease of `lease`: a new incarnation
/// of an id replaces the row of the previous one.
pub async fn register(store: &Store, me: &Instance, lease: Duration) -> Result<()> {
    let mut tx = store.begin().await?;
    let now = crate::now();
    crate::engine::db::query(
        "INSERT INTO instances (id, incarnation, hostname, pid, version, started_at, renewed_at, \
         lease_expires_at, stopped_at) VALUES ($1, $2, $3, $4, $5, $6, $6, $7, NULL) \
         ON CONFLICT (id) DO UPDATE SET incarnation = excluded.incarnation, \
         hostname = excluded.hostname, pid = excluded.pid, version = excluded.version, \
         started_at = excluded.started_at, renewed_at = excluded.renewed_at, \
         lease_expires_at = excluded.lease_expires_at, stopped_at = NULL",
    )
    .bind(&me.id)
    .bind(&me.incarnation)
    .bind(&me.hostname)
    .bind(me.pid)
    .bind(&me.version)
    .bind(&now)
    .bind(at(lease))
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Renews the lease; `false` when the row is no longer this incarnation's
/// (another process started under the same id) or the lease had already
/// expired, so survivors may have taken this instance's runs.
pub async fn renew(store: &Store, id: &str, incarnation: &str, lease: Duration) -> Result<bool> {
    let mut tx = store.begin().await?;
    let now = crate::now();
    let n = crate::engine::db::query(
        "UPDATE instances SET renewed_at = $3, lease_expires_at = $4 \
         WHERE id = $1 AND incarnation = $2 AND lease_expires_at > $3 AND stopped_at IS NULL",
    )
    .bind(id)
    .bind(incarnation)
    .bind(&now)
    .bind(at(lease))
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n == 1)
}

/// Gives the lease up at shutdown: survivors take over what this instance
/// leaves running at their next sweep instead of after the lease.
pub async fn release(store: &Store, id: &str, incarnation: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let now = crate::now();
    crate::engine::db::query(
        "UPDATE instances SET lease_expires_at = $3, stopped_at = $3 \
         WHERE id = $1 AND incarnation = $2",
    )
    .bind(id)
    .bind(incarnation)
    .bind(&now)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn list(store: &Store) -> Result<Vec<Instance>> {
    let rows = crate::engine::db::query("SELECT * FROM instances ORDER BY started_at, id")
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map).collect()
}

/// Instances holding a lease now, for `/metrics` and the health page.
pub async fn live_count(store: &Store) -> Result<i64> {
    let (n,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM instances WHERE lease_expires_at > $1 AND stopped_at IS NULL",
    )
    .bind(crate::now())
    .fetch_one(store.pool())
    .await?;
    Ok(n)
}

/// Running runs whose driver is gone, as seen by `me`: owned by an instance
/// other than `me` with no live lease. At start (`starting`), also this
/// id's own runs (the previous incarnation's: this one drives none yet) and
/// runs with no owner (left by a binary from before instances).
pub async fn lost_runs(store: &Store, me: &str, starting: bool) -> Result<Vec<LostRun>> {
    let sql = format!(
        "SELECT r.id AS run_id, r.owner_instance_id AS owner, i.hostname AS owner_hostname \
         FROM heartbeat_runs r LEFT JOIN instances i ON i.id = r.owner_instance_id \
         WHERE r.status = 'running' AND ({}) ORDER BY r.id",
        if starting {
            "r.owner_instance_id IS NULL OR r.owner_instance_id = $1 \
             OR i.id IS NULL OR i.lease_expires_at <= $2 OR i.stopped_at IS NOT NULL"
        } else {
            "r.owner_instance_id <> $1 \
             AND (i.id IS NULL OR i.lease_expires_at <= $2 OR i.stopped_at IS NOT NULL)"
        }
    );
    let rows = crate::engine::db::query(&sql)
        .bind(me)
        .bind(crate::now())
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|row| {
            Ok(LostRun {
                run_id: row.text("run_id")?,
                owner: row.opt_text("owner")?,
                owner_hostname: row.opt_text("owner_hostname")?,
            })
        })
        .collect()
}

/// Takes a lost run over from `from` (its recorded owner, `None` for none):
/// `true` for the one instance whose UPDATE found it still there, which then
/// settles it. A run settled or taken meanwhile is left alone.
pub async fn take_over(store: &Store, run_id: &str, from: Option<&str>, me: &str) -> Result<bool> {
    let mut tx = store.begin().await?;
    let n = match from {
        Some(from) => crate::engine::db::query(
            "UPDATE heartbeat_runs SET owner_instance_id = $3 \
             WHERE id = $1 AND status = 'running' AND owner_instance_id = $2",
        )
        .bind(run_id)
        .bind(from)
        .bind(me),
        None => crate::engine::db::query(
            "UPDATE heartbeat_runs SET owner_instance_id = $2 \
             WHERE id = $1 AND status = 'running' AND owner_instance_id IS NULL",
        )
        .bind(run_id)
        .bind(me),
    }
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n == 1)
}

/// Of `run_ids` (the runs this instance drives), those it must let go of:
/// ended (settled through another instance), or running under another
/// owner (taken over while this one had lost its lease). A run still
/// `queued` is being claimed here and is left alone.
pub async fn not_mine(store: &Store, me: &str, run_ids: &[String]) -> Result<Vec<String>> {
    if run_ids.is_empty() {
        return Ok(Vec::new());
    }
    let list = serde_json::to_string(run_ids).unwrap_or_else(|_| "[]".into());
    let sql = match store.backend() {
        crate::Backend::Sqlite => {
            "SELECT id FROM heartbeat_runs WHERE id IN (SELECT value FROM json_each($1)) \
             AND (status NOT IN ('running', 'queued') \
             OR (status = 'running' AND (owner_instance_id IS NULL OR owner_instance_id <> $2)))"
        }
        crate::Backend::Postgres => {
            "SELECT id::text AS id FROM heartbeat_runs \
             WHERE id::text IN (SELECT json_array_elements_text($1::json)) \
             AND (status NOT IN ('running', 'queued') \
             OR (status = 'running' AND (owner_instance_id IS NULL OR owner_instance_id <> $2)))"
        }
    };
    let rows: Vec<(String,)> = crate::engine::db::query_as(sql)
        .bind(list)
        .bind(me)
        .fetch_all(store.pool())
        .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// Forgets instances stopped or expired longer than `age` ago that own no
/// running run (a Deployment's pods get new names on every rollout).
pub async fn prune(store: &Store, age: Duration) -> Result<u64> {
    let cutoff = (chrono::Utc::now() - chrono::Duration::from_std(age).unwrap_or_default())
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "DELETE FROM instances WHERE lease_expires_at < $1 AND NOT EXISTS \
         (SELECT 1 FROM heartbeat_runs r WHERE r.owner_instance_id = instances.id \
          AND r.status = 'running')",
    )
    .bind(cutoff)
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n)
}
