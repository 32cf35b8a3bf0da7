//! SQL storage for Paperclip on SQLite (embedded, the default) and Postgres.
//!
//! One schema and one set of queries serve both engines: the queries use only
//! SQL that both accept (`$n` parameters, `RETURNING`, row values), run on
//! sqlx's concrete SQLite or Postgres driver through [`db`], and keep ids,
//! timestamps and JSON as text. Each module
//! owns one aggregate; every mutation runs in one transaction together with its
//! activity row (see [`activity`]).
//!
//! SQLite allows one writer at a time. Rather than letting concurrent writers
//! collide and retry on `SQLITE_BUSY`, write transactions on SQLite queue for
//! one writer connection that commits them in groups ([`writer`]); reads run
//! concurrently on the pool (WAL mode).

/// A cost event column inside `SUM(...)`, capped at the input bound
/// (`paperclip_core::limits::TOKENS_MAX` = `COST_CENTS_MAX`). Rows written
/// before the bound existed may hold up to i64::MAX, and a sum of two of them
/// overflows on both engines; capped, a sum needs ~900 million events to.
macro_rules! capped {
    ($column:literal) => {
        concat!(
            "CASE WHEN ",
            $column,
            " > 10000000000 THEN 10000000000 ELSE ",
            $column,
            " END"
        )
    };
}

pub mod approvals;
pub mod audit;
pub mod backup;
pub mod decisions;
pub mod engine;
pub mod fleet;
pub mod issues;
pub mod money;
pub mod org;
pub mod port;
pub mod push;
pub mod routines;
pub mod runlogs;
pub mod runs;
pub mod thread;
pub mod views;
pub mod wakes;

use std::str::FromStr;

use crate::engine::{db, migrate, pg_params, raw_conn, writer};
use crate::views::inbox_badge;
use std::time::Duration;

use paperclip_core::model::ActivityEntry;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::Executor;
use tokio::sync::broadcast;

pub use crate::engine::error::{Error, Result};
pub use crate::engine::migrate::latest_version as schema_version;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// What committed transactions announce: the runtime turns these into live
/// events and into "a run is waiting" signals for the executor.
#[derive(Debug, Clone)]
pub enum StoreEvent {
    Activity(ActivityEntry),
    RunQueued {
        company_id: String,
        agent_id: String,
        run_id: String,
    },
    /// Queued runs may be startable now without a new one being queued (a
    /// budget raised, an approval decided, a card created or resolved): the
    /// executor looks again.
    RunsMayStart,
    /// Agents whose running work must stop now (a budget hard stop).
    AgentsStopped {
        agent_ids: Vec<String>,
        reason: String,
    },
}

/// Every SQLite connection's settings (the writer's and the pool's).
const SQLITE_SETTINGS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;";

#[derive(Clone)]
pub struct Store {
    pool: db::Pool,
    backend: Backend,
    sqlite_writer: Option<writer::Writer>,
    events: broadcast::Sender<StoreEvent>,
    badges: std::sync::Arc<inbox_badge::Badges>,
    kept: std::sync::Arc<Kept>,
}

/// What the store keeps between requests: task pages and the write
/// versions that retire them (`views::task_pages`).
#[derive(Default)]
pub(crate) struct Kept {
    versions: views::task_pages::Versions,
    pages: views::task_pages::Pages,
}

/// A write transaction. On SQLite it is a savepoint on the one writer, held
/// until the transaction has really ended (a dropped one is rolled back
/// before the next writer goes on), and its commit returns once its group is
/// committed. Events it collects are published only after a successful
/// commit.
pub struct Tx {
    inner: Option<db::Conn>,
    pending: Vec<StoreEvent>,
    events: broadcast::Sender<StoreEvent>,
    badges: std::sync::Arc<inbox_badge::Badges>,
    kept: std::sync::Arc<Kept>,
}

/// The rows a whole-row update locks first (see [`Tx::lock_row`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Locked {
    Issue,
    Agent,
    Company,
}

impl Tx {
    pub fn conn(&mut self) -> &mut db::Conn {
        self.inner
            .as_mut()
            .expect("a transaction is live until commit")
    }

    /// Takes a row's lock before a read-modify-write of the whole row.
    /// SQLite's one writer already serialises writers; on Postgres two
    /// writers of different fields (a person changing a task's goal and
    /// then its assignee, the runtime marking an agent running while the
    /// board renames it) would both read the old row, and the later write
    /// would put back what the earlier one changed. An issue may be named
    /// by its identifier too.
    pub(crate) async fn lock_row(&mut self, table: Locked, key: &str) -> Result<()> {
        if self.conn().backend() == Backend::Postgres {
            let (sql, key) = match table {
                Locked::Issue if paperclip_core::issue::parse_identifier(key).is_some() => (
                    "SELECT id FROM issues WHERE identifier = $1 FOR UPDATE",
                    key.to_ascii_uppercase(),
                ),
                Locked::Issue => (
                    "SELECT id FROM issues WHERE id = $1 FOR UPDATE",
                    key.to_string(),
                ),
                Locked::Agent => (
                    "SELECT id FROM agents WHERE id = $1 FOR UPDATE",
                    key.to_string(),
                ),
                Locked::Company => (
                    "SELECT id FROM companies WHERE id = $1 FOR UPDATE",
                    key.to_string(),
                ),
            };
            db::query(sql).bind(key).fetch_all(self.conn()).await?;
        }
        Ok(())
    }

    pub(crate) fn announce(&mut self, event: StoreEvent) {
        self.pending.push(event);
    }

    /// Announces [`StoreEvent::RunsMayStart`] at commit (once per transaction).
    pub(crate) fn runs_may_start(&mut self) {
        if !self
            .pending
            .iter()
            .any(|e| matches!(e, StoreEvent::RunsMayStart))
        {
            self.pending.push(StoreEvent::RunsMayStart);
        }
    }

    pub async fn commit(mut self) -> Result<()> {
        let inner = self
            .inner
            .take()
            .expect("a transaction is live until commit");
        inner.commit().await?;
        self.badges.committed(&self.pending);
        self.kept.versions.committed(&self.pending);
        for event in std::mem::take(&mut self.pending) {
            // Nobody listening (tests of the store alone) is fine.
            let _ = self.events.send(event);
        }
        Ok(())
    }

    pub async fn rollback(mut self) -> Result<()> {
        if let Some(inner) = self.inner.take() {
            inner.rollback().await?;
        }
        Ok(())
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        // Postgres: sqlx rolls a dropped transaction back itself.
        if let Some(db::Conn::SqliteWriter(slot)) = self.inner.take() {
            writer::abandon(slot);
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database at `url` and applies pending
    /// migrations. `sqlite://path` and `postgres://...` are accepted.
    pub async fn connect(url: &str) -> anyhow::Result<Store> {
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            anyhow::bail!("unsupported database url (expected sqlite:// or postgres://)");
        };
        if backend == Backend::Sqlite {
            no_sqlite_memory_statistics();
        }
        let pool = match backend {
            Backend::Sqlite => db::Pool::Sqlite(
                SqlitePoolOptions::new()
                    .max_connections(8)
                    .min_connections(1)
                    // A local file connection does not go stale; pinging it
                    // before every acquire is one more worker round trip.
                    .test_before_acquire(false)
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            conn.execute(SQLITE_SETTINGS).await?;
                            Ok(())
                        })
                    })
                    .connect_with(SqliteConnectOptions::from_str(url)?)
                    .await?,
            ),
            Backend::Postgres => {
                let options = PgConnectOptions::from_str(url)?
                    .options([("max_parallel_workers_per_gather", "0")]);
                let pool = PgPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(30))
                    // A broken connection fails its query instead of costing
                    // every acquire a ping round trip.
                    .test_before_acquire(false)
                    // No parallel workers: every statement reads a page or an
                    // index range, and workers of one (a search's walk: 19 ms
                    // with two, 9 ms alone, at a million tasks) took the
                    // cores from the requests beside it (a search page's
                    // p50 36 ms with none, 67 ms with them).
                    .connect_with(options.clone())
                    .await?;
                db::Pool::Postgres(pool, std::sync::Arc::new(pg_params::Params::new(options)))
            }
        };
        let sqlite_writer = match backend {
            Backend::Sqlite => {
                let options = SqliteConnectOptions::from_str(url)?;
                let path = options.get_filename();
                if path.as_os_str().is_empty() || path.as_os_str() == ":memory:" {
                    anyhow::bail!("an in-memory SQLite database cannot be shared by the writer and readers: name a file");
                }
                Some(writer::new(raw_conn::RawConn::open(path, SQLITE_SETTINGS)?))
            }
            Backend::Postgres => None,
        };
        let store = Store {
            pool,
            backend,
            sqlite_writer,
            events: broadcast::channel(4096).0,
            badges: Default::default(),
            kept: Default::default(),
        };
        migrate::run(&store).await?;
        Ok(store)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub(crate) fn badges(&self) -> &inbox_badge::Badges {
        &self.badges
    }

    pub(crate) fn versions(&self) -> &views::task_pages::Versions {
        &self.kept.versions
    }

    pub(crate) fn pages(&self) -> &views::task_pages::Pages {
        &self.kept.pages
    }

    /// A commit this process did not make may have changed `company` (every
    /// company with `None`): kept task pages of it are found again.
    pub fn changed_elsewhere(&self, company: Option<&str>) {
        self.kept.versions.moved(company);
    }

    pub fn pool(&self) -> &db::Pool {
        &self.pool
    }

    pub async fn begin(&self) -> Result<Tx> {
        let inner = match &self.sqlite_writer {
            Some(writer) => db::Conn::SqliteWriter(writer::begin(writer).await?),
            None => self.pool.begin_postgres().await?,
        };
        Ok(self.tx(inner))
    }

    /// A unit of work that is one statement, atomic by itself. On Postgres
    /// it runs outside a transaction: no `BEGIN` and `COMMIT` round trips,
    /// and a row lock the statement takes ends with it rather than a round
    /// trip later. On SQLite it is [`Store::begin`].
    pub(crate) async fn begin_one_statement(&self) -> Result<Tx> {
        if self.sqlite_writer.is_some() {
            return self.begin().await;
        }
        Ok(self.tx(self.pool.acquire().await?))
    }

    fn tx(&self, inner: db::Conn) -> Tx {
        Tx {
            inner: Some(inner),
            pending: Vec::new(),
            events: self.events.clone(),
            badges: self.badges.clone(),
            kept: self.kept.clone(),
        }
    }

    /// Events of transactions committed from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<StoreEvent> {
        self.events.subscribe()
    }

    pub async fn close(&self) {
        if let Some(writer) = &self.sqlite_writer {
            writer::flush(writer).await;
        }
        self.pool.close().await;
    }
}

/// SQLite keeps process-wide memory statistics behind one mutex that every
/// allocation and free takes. sqlx copies each value of a result row on the
/// connection's worker thread and frees it on the reader's, so concurrent
/// reads of large pages contended on that mutex (a quarter of the samples of
/// a list of 1,000 issues). Nothing here reads the statistics. The setting
/// only takes effect before SQLite initialises, i.e. before the first
/// connection of the process; later calls are refused and change nothing.
fn no_sqlite_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int; sqlite3_config is
        // safe to call before initialisation and returns SQLITE_MISUSE after.
        let rc = unsafe {
            libsqlite3_sys::sqlite3_config(
                libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS,
                0 as std::os::raw::c_int,
            )
        };
        if rc != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(
                rc,
                "SQLite was initialised already; memory statistics stay on"
            );
        }
    });
}

/// Current time as stored: RFC 3339, UTC, millisecond precision.
pub fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// New entity id: a UUIDv7, so ids sort in creation order and serve as cursors.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// `$start, $start+1, ...` for an `IN (...)` list of `n` values.
#[cfg(test)]
#[test]
fn the_sum_cap_is_the_input_bound() {
    use paperclip_core::limits::{COST_CENTS_MAX, TOKENS_MAX};
    let cap = format!("> {TOKENS_MAX} THEN {COST_CENTS_MAX} ELSE");
    assert!(capped!("x").contains(&cap), "{}", capped!("x"));
}
