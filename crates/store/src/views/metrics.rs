//! What `/metrics` reads from the database at scrape time: three grouped
//! queries whatever the size of the instance, so a scrape stays cheap and
//! its cost does not grow with the number of companies or agents.

use paperclip_core::heartbeat::{RunStatus, WakeSkipReason};

use crate::engine::db::{query, Pool};
use crate::engine::row::RowExt;
use crate::{Result, Store};

/// Runs by status and by their agent's adapter type (the agent's current
/// one: runs do not record the adapter they ran on).
pub struct RunCount {
    pub status: RunStatus,
    pub adapter_type: String,
    pub count: i64,
}

pub struct Scrape {
    pub runs: Vec<RunCount>,
    /// Wakes recorded as skipped, by reason; `None` for a row without one.
    pub skipped_wakes: Vec<(Option<WakeSkipReason>, i64)>,
    /// Each company's spend this budget month, in cents.
    pub spend_month_cents: Vec<(String, i64)>,
    pub pool: PoolStats,
    /// Control-plane instances holding a lease now (`crate::fleet`).
    pub live_instances: i64,
}

/// The read pool (on SQLite, the writer's one connection is apart from it).
pub struct PoolStats {
    pub size: u32,
    pub idle: usize,
}

pub async fn scrape(store: &Store) -> Result<Scrape> {
    let (runs, skipped_wakes, spend_month_cents, live_instances) = tokio::try_join!(
        runs(store),
        skipped_wakes(store),
        spend(store),
        crate::fleet::instances::live_count(store)
    )?;
    let pool = match store.pool() {
        Pool::Sqlite(pool) => PoolStats {
            size: pool.size(),
            idle: pool.num_idle(),
        },
        Pool::Postgres(pool, _) => PoolStats {
            size: pool.size(),
            idle: pool.num_idle(),
        },
    };
    Ok(Scrape {
        runs,
        skipped_wakes,
        spend_month_cents,
        pool,
        live_instances,
    })
}

async fn runs(store: &Store) -> Result<Vec<RunCount>> {
    let rows = query(
        "SELECT r.status AS s, a.adapter_type AS t, COUNT(*) AS n \
         FROM heartbeat_runs r JOIN agents a ON a.id = r.agent_id \
         GROUP BY r.status, a.adapter_type ORDER BY r.status, a.adapter_type",
    )
    .fetch_all(store.pool())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(RunCount {
            status: row.stored("s")?,
            adapter_type: row.text("t")?,
            count: row.int("n")?,
        });
    }
    Ok(out)
}

async fn skipped_wakes(store: &Store) -> Result<Vec<(Option<WakeSkipReason>, i64)>> {
    let rows = query(
        "SELECT skip_reason AS k, COUNT(*) AS n FROM agent_wakeup_requests \
         WHERE status = 'skipped' GROUP BY skip_reason ORDER BY skip_reason",
    )
    .fetch_all(store.pool())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push((row.opt_stored("k")?, row.int("n")?));
    }
    Ok(out)
}

async fn spend(store: &Store) -> Result<Vec<(String, i64)>> {
    // As the company's `spentMonthlyCents`: the month's `task` totals (they
    // split the month's whole spend), kept per month, not a sum of events.
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let rows = query(
        "SELECT c.id AS id, CAST(COALESCE(SUM(t.cost_cents), 0) AS BIGINT) AS n \
         FROM companies c LEFT JOIN cost_month_totals t \
           ON t.company_id = c.id AND t.month = $1 AND t.dim = 'task' \
         GROUP BY c.id ORDER BY c.id",
    )
    .bind(&start[..7])
    .fetch_all(store.pool())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push((row.text("id")?, row.int("n")?));
    }
    Ok(out)
}
