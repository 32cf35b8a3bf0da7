//! Run logs in the database, for instances sharing one Postgres: any
//! instance reads a run's log, live or finished, whichever one runs it.
//!
//! The same log as [`LocalFileLogStore`] writes, byte for byte in offsets:
//! whole NDJSON lines, the head up to half the limit, a rolling tail, the
//! marker line standing for the bytes left out. The writer never waits for
//! the database on the run's path: lines gather in memory (bounded by the
//! log's own limit: the head, and a tail that drops its oldest chunks) and
//! one task per run writes them in order, every [`FLUSH_EVERY`] or sooner
//! when much is waiting. [`RunLogWriter::finish`] waits until all of it is
//! written, so once a run's end is recorded its whole log reads anywhere.
//!
//! Reads are synchronous (the trait is): the query runs on the runtime's
//! handle after [`tokio::task::block_in_place`], so call them on a
//! multi-thread runtime or a blocking thread. A run whose log was written
//! as a file before (`logStore = local_file`, nothing of it here) is read
//! from the file.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use paperclip_store::runlogs::{Chunk, Fetched};
use paperclip_store::Store;

use super::db_writer::DbWriter;
use super::writer::Bounds;
use super::{
    marker_line, page, read_cut, CutParts, LocalFileLogStore, LogCut, LogPage, RunLogStore,
    RunLogWriter, DEFAULT_MAX_BYTES, MIN_MAX_BYTES,
};

pub use super::db_writer::FLUSH_EVERY;

pub struct PostgresLogStore {
    store: Store,
    /// Logs written before the switch, still read from their files.
    files: LocalFileLogStore,
    max_bytes: AtomicU64,
}

impl PostgresLogStore {
    pub fn new(store: Store, files: LocalFileLogStore) -> PostgresLogStore {
        PostgresLogStore {
            store,
            files,
            max_bytes: AtomicU64::new(DEFAULT_MAX_BYTES),
        }
    }

    /// The concrete writer (tests wait on its flushes).
    pub(crate) fn open(&self, company_id: &str, run_id: &str) -> std::io::Result<DbWriter> {
        let log_ref = format!("{company_id}/{run_id}.ndjson");
        let run = run_of(&log_ref)
            .filter(|_| !company_id.is_empty() && !company_id.contains('/'))
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "bad run id"))?;
        let handle = tokio::runtime::Handle::try_current().map_err(|_| outside())?;
        Ok(DbWriter::open(
            &handle,
            self.store.clone(),
            run,
            log_ref,
            Bounds::new(self.max_bytes()),
        ))
    }

    fn fetch(&self, run_id: &str, offset: u64, limit: u64) -> std::io::Result<Fetched> {
        block(paperclip_store::runlogs::fetch(
            &self.store,
            run_id,
            offset,
            limit,
        ))?
        .map_err(std::io::Error::other)
    }
}

fn outside() -> std::io::Error {
    std::io::Error::other("the database run log store is used outside the tokio runtime")
}

/// Runs a query from synchronous code on the runtime's handle.
pub(super) fn block<F: Future>(fut: F) -> std::io::Result<F::Output> {
    let handle = tokio::runtime::Handle::try_current().map_err(|_| outside())?;
    // On a worker thread the worker hands its other tasks on first; on a
    // blocking thread this just runs.
    Ok(tokio::task::block_in_place(|| handle.block_on(fut)))
}

/// The run of a `logRef` (`<company>/<run>.ndjson`; upstream's file logs
/// name the agent too), if its last part names one.
pub(super) fn run_of(log_ref: &str) -> Option<String> {
    let (_, file) = log_ref.rsplit_once('/')?;
    let run = file.strip_suffix(".ndjson")?;
    uuid::Uuid::parse_str(run).is_ok().then(|| run.to_string())
}

/// The chunks of one read: contiguous runs of bytes at their offsets.
pub(super) struct Sparse<'a>(pub(super) &'a [Chunk]);

impl Sparse<'_> {
    /// Up to `limit` bytes from `at`, and whether the log ended within
    /// them (the chunks hold everything a read asked for).
    pub(super) fn bytes(&self, at: u64, limit: u64) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut pos = at;
        for c in self.0 {
            let bytes = c.content.as_bytes();
            let end = c.start + bytes.len() as u64;
            if end <= pos {
                continue;
            }
            if c.start > pos || out.len() as u64 >= limit {
                break;
            }
            let from = (pos - c.start) as usize;
            let take = (bytes.len() - from).min((limit - out.len() as u64) as usize);
            out.extend_from_slice(&bytes[from..from + take]);
            pos += take as u64;
        }
        let eof = (out.len() as u64) < limit;
        (out, eof)
    }
}

impl CutParts for Sparse<'_> {
    fn head(&self, at: u64, limit: u64) -> std::io::Result<Vec<u8>> {
        Ok(self.bytes(at, limit).0)
    }
    fn tail(&self, at: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
        Ok(self.bytes(at, limit))
    }
}

/// The page at `offset` of what one read fetched.
pub(super) fn page_of(fetched: &Fetched, offset: u64, limit: u64) -> LogPage {
    let chunks = Sparse(&fetched.chunks);
    let Some(cut) = &fetched.cut else {
        let (buf, eof) = chunks.bytes(offset, limit);
        return page(&buf, offset, limit as usize, eof);
    };
    let marker = match &cut.marker {
        Some(marker) => marker.clone().into_bytes(),
        // While the run writes, as the file store: made on each read.
        None if cut.tail_start > cut.head_bytes => {
            marker_line(cut.tail_start - cut.head_bytes, cut.max_bytes).into_bytes()
        }
        None => Vec::new(),
    };
    read_cut(
        &chunks,
        cut.head_bytes,
        &marker,
        cut.tail_start,
        offset,
        limit,
    )
    .expect("chunks in memory")
}

impl RunLogStore for PostgresLogStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn writer(&self, company_id: &str, run_id: &str) -> std::io::Result<Box<dyn RunLogWriter>> {
        Ok(Box::new(self.open(company_id, run_id)?))
    }

    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<LogPage> {
        // A log this store never wrote (another `logRef` shape) is a file's.
        let Some(run) = run_of(log_ref) else {
            return self.files.read(log_ref, offset, limit);
        };
        // At least one whole character, however small the limit.
        let limit = limit.max(4);
        let fetched = self.fetch(&run, offset, limit)?;
        if fetched.is_local_file() {
            return self.files.read(log_ref, offset, limit);
        }
        Ok(page_of(&fetched, offset, limit))
    }

    fn cut(&self, log_ref: &str) -> std::io::Result<Option<LogCut>> {
        let Some(run) = run_of(log_ref) else {
            return self.files.cut(log_ref);
        };
        let fetched = self.fetch(&run, 0, 0)?;
        if fetched.is_local_file() {
            return self.files.cut(log_ref);
        }
        Ok(fetched
            .cut
            .filter(|c| c.marker.is_some() || c.tail_start > c.head_bytes)
            .map(|c| LogCut {
                head_bytes: c.head_bytes,
                tail_start: c.tail_start,
                max_bytes: c.max_bytes,
            }))
    }

    fn remove(&self, log_ref: &str) -> std::io::Result<bool> {
        // A log from before the switch is a file on this instance, if any.
        let file = self.files.remove(log_ref)?;
        let Some(run) = run_of(log_ref) else {
            return Ok(file);
        };
        let rows = block(paperclip_store::runlogs::remove(&self.store, &run))?
            .map_err(std::io::Error::other)?;
        Ok(file || rows)
    }

    fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Relaxed)
    }

    fn set_max_bytes(&self, bytes: u64) {
        self.max_bytes
            .store(bytes.max(MIN_MAX_BYTES), Ordering::Relaxed);
        self.files.set_max_bytes(bytes);
    }
}
