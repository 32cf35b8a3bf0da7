//! Run logs: the output of a run as NDJSON lines `{ts, stream, chunk, seq}`.
//! [`RunLogStore`] is the seam for object storage; [`LocalFileLogStore`]
//! keeps one file per run under the data dir (SQLite: one instance), and
//! [`PostgresLogStore`] keeps chunks in the database, so every instance on
//! one Postgres reads every run's log (`db.rs`), with the same offsets.
//!
//! A log is bounded on disk by the store's limit (`--run-log-max-bytes`):
//! up to half of it, the log is written as it comes (the head). Past that,
//! lines go to a rolling tail of two segments of a quarter each
//! (`<run>.ndjson.tail/<offset>.ndjson`): when both are full the older is
//! deleted. When the run ends the tail is appended to the file, after a
//! marker line saying how many bytes were left out, so the file keeps the
//! head, the marker and the real last bytes: at most the limit plus the
//! marker. A sidecar `<run>.ndjson.cut` says where the head ends (and,
//! once the run has ended, where the marker and the tail are).
//!
//! Offsets (`offset`, `nextOffset`, the run's `logBytes`) count the whole
//! output as it was written, cut or not: a reader's offset stays valid while
//! the log is cut and after it is closed. Reading inside the part left out
//! returns the marker line and continues at the tail.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

/// The default `--run-log-max-bytes`: 16 MiB a run.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The smallest limit accepted (the head, two tail segments and a few lines).
pub const MIN_MAX_BYTES: u64 = 64 * 1024;

pub trait RunLogStore: Send + Sync {
    /// Name stored on the run as `logStore`.
    fn kind(&self) -> &'static str;
    /// Opens the log of a run for appending; the writer is used by one run only.
    fn writer(&self, company_id: &str, run_id: &str) -> std::io::Result<Box<dyn RunLogWriter>>;
    /// Reads a page of at most `limit` bytes from `offset` of a log by its
    /// `logRef` (see [`page_len`]).
    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<LogPage>;
    /// Where the log was cut, if it outgrew the limit.
    fn cut(&self, log_ref: &str) -> std::io::Result<Option<LogCut>>;
    /// Deletes a log and everything kept for it; `false` if there was none.
    fn remove(&self, log_ref: &str) -> std::io::Result<bool>;
    /// The most a run's log keeps on disk (plus the marker line).
    fn max_bytes(&self) -> u64;
    fn set_max_bytes(&self, bytes: u64);
}

/// Part of a run log, and where the next part starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPage {
    pub content: String,
    /// `offset` plus the bytes `content` stands for, so paging never
    /// skips or repeats a byte (the marker line stands for the bytes left out).
    pub next_offset: u64,
}

/// A log that outgrew its limit: `[head_bytes, tail_start)` was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCut {
    pub head_bytes: u64,
    pub tail_start: u64,
    /// The limit the log was written under.
    pub max_bytes: u64,
}

impl LogCut {
    pub fn omitted_bytes(&self) -> u64 {
        self.tail_start.saturating_sub(self.head_bytes)
    }
}

/// How much of `buf` (read from a log at some offset, at most `limit` bytes,
/// `eof` when the log ended within it) one page returns: whole lines, so a
/// reader can parse each page on its own; a line longer than `limit` is cut
/// on a character boundary and continued on the next page. A line still being
/// written at the end of the log waits for the next read.
pub fn page_len(buf: &[u8], limit: usize, eof: bool) -> usize {
    if let Some(newline) = buf.iter().rposition(|b| *b == b'\n') {
        return newline + 1;
    }
    if eof && buf.len() < limit {
        return 0;
    }
    match std::str::from_utf8(buf) {
        Ok(_) => buf.len(),
        Err(e) if e.valid_up_to() > 0 => e.valid_up_to(),
        // Only an offset inside a character gets here; step over the broken
        // bytes (shown as U+FFFD) rather than stall on them.
        Err(e) => e.error_len().unwrap_or(buf.len()),
    }
}

/// The page of `buf` read at `offset`.
pub fn page(buf: &[u8], offset: u64, limit: usize, eof: bool) -> LogPage {
    let len = page_len(buf, limit, eof);
    LogPage {
        content: String::from_utf8_lossy(&buf[..len]).into_owned(),
        next_offset: offset + len as u64,
    }
}

/// The line that stands in the log for the `omitted` bytes left out.
pub fn marker_line(omitted: u64, max_bytes: u64) -> String {
    let chunk = format!(
        "[paperclip: {omitted} bytes of this run's log were left out here: a run log keeps \
         its first {} and its last part, at most {} in all (--run-log-max-bytes)]\n",
        human(max_bytes / 2),
        human(max_bytes)
    );
    let mut line = json!({ "ts": paperclip_store::now(), "stream": "system", "chunk": chunk,
        "omittedBytes": omitted })
    .to_string();
    line.push('\n');
    line
}

fn human(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

pub trait RunLogWriter: Send {
    /// Appends one line (or, for a chunk too long for the tail, several);
    /// returns bytes written.
    fn append(&mut self, stream: &str, chunk: &str, seq: u64) -> std::io::Result<u64>;
    fn log_ref(&self) -> String;
    /// Closes the log once the run has written everything: a cut log gets
    /// its marker and tail appended.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub struct LocalFileLogStore {
    root: PathBuf,
    max_bytes: AtomicU64,
}

impl LocalFileLogStore {
    pub fn new(root: PathBuf) -> LocalFileLogStore {
        LocalFileLogStore {
            root,
            max_bytes: AtomicU64::new(DEFAULT_MAX_BYTES),
        }
    }

    fn path(&self, log_ref: &str) -> std::io::Result<PathBuf> {
        // A logRef is `<company>/<run>.ndjson`; refuse anything that could leave the root.
        let safe = !log_ref.is_empty()
            && !log_ref.starts_with('/')
            && log_ref
                .split('/')
                .all(|part| !part.is_empty() && part != "..");
        if !safe {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "bad log ref",
            ));
        }
        Ok(self.root.join(log_ref))
    }
}

/// The files of one log: the log, its cut sidecar and its tail segments.
#[derive(Clone)]
struct Files {
    main: PathBuf,
    cut: PathBuf,
    tail: PathBuf,
}

impl Files {
    fn of(main: PathBuf) -> Files {
        let with = |suffix: &str| {
            let mut name = main.clone().into_os_string();
            name.push(suffix);
            PathBuf::from(name)
        };
        Files {
            cut: with(".cut"),
            tail: with(".tail"),
            main,
        }
    }

    fn state(&self) -> std::io::Result<Option<CutState>> {
        match std::fs::read(&self.cut) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_state(&self, state: &CutState) -> std::io::Result<()> {
        let tmp = {
            let mut name = self.cut.clone().into_os_string();
            name.push(".tmp");
            PathBuf::from(name)
        };
        std::fs::write(&tmp, serde_json::to_vec(state).expect("state serializes"))?;
        std::fs::rename(&tmp, &self.cut)
    }

    /// The tail segments, oldest first: `(start offset, path)`.
    fn segments(&self) -> std::io::Result<Vec<(u64, PathBuf)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.tail)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(start) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".ndjson"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            out.push((start, entry.path()));
        }
        out.sort();
        Ok(out)
    }
}

/// The sidecar of a cut log. While the run writes, only `head`; once it has
/// ended, where the marker is and the offset its tail starts at.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct CutState {
    head: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    marker: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tail_start: Option<u64>,
    max_bytes: u64,
}

fn not_found(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
}

/// Up to `limit` bytes of `path` from `at`, and whether the file ended within them.
fn read_at(path: &Path, at: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if at >= len {
        return Ok((Vec::new(), true));
    }
    file.seek(SeekFrom::Start(at))?;
    let mut buf = Vec::new();
    file.take(limit).read_to_end(&mut buf)?;
    let eof = at + buf.len() as u64 >= len;
    Ok((buf, eof))
}

/// Where the tail of a cut log is read from.
enum Tail {
    /// Appended to the log after the marker, at `at` in the file.
    InFile { path: PathBuf, at: u64 },
    /// Still in segments, while the run writes.
    Segments(Vec<(u64, PathBuf)>),
}

impl Tail {
    /// Up to `limit` bytes of the tail from `offset` (at or past its start).
    fn read(&self, start: u64, offset: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
        match self {
            Tail::InFile { path, at } => read_at(path, at + (offset - start), limit),
            Tail::Segments(segments) if segments.is_empty() => Ok((Vec::new(), true)),
            Tail::Segments(segments) => {
                let i = segments
                    .iter()
                    .rposition(|(s, _)| *s <= offset)
                    .unwrap_or(0);
                let (s, path) = &segments[i];
                let (buf, eof) = read_at(path, offset - s, limit)?;
                // A segment before the last ends where the next begins.
                Ok((buf, eof && i + 1 == segments.len()))
            }
        }
    }
}

/// Where a cut log's parts are read from: up to `limit` bytes of the head
/// from an offset, and of the tail from an offset at or past its start
/// (with whether the log ended within them).
pub(crate) trait CutParts {
    fn head(&self, at: u64, limit: u64) -> std::io::Result<Vec<u8>>;
    fn tail(&self, at: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)>;
}

struct FileParts<'a> {
    main: &'a Path,
    tail_start: u64,
    tail: &'a Tail,
}

impl CutParts for FileParts<'_> {
    fn head(&self, at: u64, limit: u64) -> std::io::Result<Vec<u8>> {
        read_at(self.main, at, limit).map(|(buf, _)| buf)
    }
    fn tail(&self, at: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
        self.tail.read(self.tail_start, at, limit)
    }
}

/// A page of a cut log: the head, the marker standing for the bytes
/// left out, the tail.
pub(crate) fn read_cut(
    parts: &dyn CutParts,
    head: u64,
    marker: &[u8],
    tail_start: u64,
    offset: u64,
    limit: u64,
) -> std::io::Result<LogPage> {
    let mut out: Vec<u8> = Vec::new();
    let mut at = offset;
    let mut room = limit;
    if at < head {
        let buf = parts.head(at, room.min(head - at))?;
        if at + (buf.len() as u64) < head {
            // The page ends in the head: as any page.
            return Ok(page(&buf, at, room as usize, false));
        }
        at = head;
        room -= buf.len() as u64;
        out = buf;
    }
    if at < tail_start {
        // The marker is never split: it is all of a page or not in it.
        if !out.is_empty() && (marker.len() as u64) > room {
            return Ok(whole(out, at));
        }
        out.extend_from_slice(marker);
        room = room.saturating_sub(marker.len() as u64);
        at = tail_start;
    }
    if room == 0 && !out.is_empty() {
        return Ok(whole(out, at));
    }
    let (buf, eof) = parts.tail(at, room.max(4))?;
    if out.is_empty() {
        return Ok(page(&buf, at, room.max(4) as usize, eof));
    }
    // After the head or the marker, only whole lines.
    let len = buf.iter().rposition(|b| *b == b'\n').map_or(0, |n| n + 1);
    out.extend_from_slice(&buf[..len]);
    Ok(whole(out, at + len as u64))
}

fn whole(bytes: Vec<u8>, next: u64) -> LogPage {
    LogPage {
        content: String::from_utf8_lossy(&bytes).into_owned(),
        next_offset: next,
    }
}

impl RunLogStore for LocalFileLogStore {
    fn kind(&self) -> &'static str {
        "local_file"
    }

    fn writer(&self, company_id: &str, run_id: &str) -> std::io::Result<Box<dyn RunLogWriter>> {
        let log_ref = format!("{company_id}/{run_id}.ndjson");
        let path = self.path(&log_ref)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let written = file.metadata()?.len();
        Ok(Box::new(FileWriter {
            file: std::io::BufWriter::new(file),
            files: Files::of(path),
            log_ref,
            bounds: Bounds::new(self.max_bytes()),
            written,
            tail: None,
        }))
    }

    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<LogPage> {
        let files = Files::of(self.path(log_ref)?);
        // At least one whole character, however small the limit.
        let limit = limit.max(4);
        // A cut log's tail moves (a segment is dropped, or the run ends and
        // it is appended to the log) while it is read: read again then.
        let mut last = None;
        for _ in 0..5 {
            match read_once(&files, offset, limit) {
                Err(e) if not_found(&e) => last = Some(e),
                other => return other,
            }
        }
        Err(last.expect("a failed attempt"))
    }

    fn cut(&self, log_ref: &str) -> std::io::Result<Option<LogCut>> {
        let files = Files::of(self.path(log_ref)?);
        for _ in 0..5 {
            let Some(state) = files.state()? else {
                return Ok(None);
            };
            if let Some(tail_start) = state.tail_start {
                return Ok(Some(LogCut {
                    head_bytes: state.head,
                    tail_start,
                    max_bytes: state.max_bytes,
                }));
            }
            match files.segments() {
                Ok(segments) => {
                    let tail_start = segments.first().map_or(state.head, |(s, _)| *s);
                    return Ok((tail_start > state.head).then_some(LogCut {
                        head_bytes: state.head,
                        tail_start,
                        max_bytes: state.max_bytes,
                    }));
                }
                Err(e) if not_found(&e) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    fn remove(&self, log_ref: &str) -> std::io::Result<bool> {
        let files = Files::of(self.path(log_ref)?);
        let mut found = false;
        match std::fs::remove_dir_all(&files.tail) {
            Ok(()) => found = true,
            Err(e) if not_found(&e) => {}
            Err(e) => return Err(e),
        }
        // The log before its sidecar: a log without one reads as whole.
        for path in [&files.main, &files.cut] {
            match std::fs::remove_file(path) {
                Ok(()) => found = true,
                Err(e) if not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }

    fn max_bytes(&self) -> u64 {
        self.max_bytes.load(Ordering::Relaxed)
    }

    fn set_max_bytes(&self, bytes: u64) {
        self.max_bytes
            .store(bytes.max(MIN_MAX_BYTES), Ordering::Relaxed);
    }
}

fn read_once(files: &Files, offset: u64, limit: u64) -> std::io::Result<LogPage> {
    let empty = LogPage {
        content: String::new(),
        next_offset: offset,
    };
    let Some(state) = files.state()? else {
        // Reading at an offset past the end is empty, not an error (the OS
        // refuses reads whose end would pass i64::MAX).
        return match read_at(&files.main, offset, limit) {
            Ok((buf, eof)) => Ok(page(&buf, offset, limit as usize, eof)),
            // No log (nothing written yet): empty, and a cut log is never
            // without its file, so this is not retried.
            Err(e) if not_found(&e) => Ok(empty),
            Err(e) => Err(e),
        };
    };
    match (state.marker, state.tail_start) {
        (Some(marker_len), Some(tail_start)) => {
            let (marker, _) = read_at(&files.main, state.head, marker_len)?;
            let tail = Tail::InFile {
                path: files.main.clone(),
                at: state.head + marker_len,
            };
            let parts = FileParts {
                main: &files.main,
                tail_start,
                tail: &tail,
            };
            read_cut(&parts, state.head, &marker, tail_start, offset, limit)
        }
        _ => {
            // Without the segments' folder the run has just ended and its
            // tail is in the log: `read` looks again (NotFound).
            let segments = files.segments()?;
            // No segment yet: the tail is just starting, at the head's end.
            let first = segments.first().map_or(state.head, |(s, _)| *s);
            let marker = if first > state.head {
                marker_line(first - state.head, state.max_bytes).into_bytes()
            } else {
                Vec::new()
            };
            let tail = Tail::Segments(segments);
            let parts = FileParts {
                main: &files.main,
                tail_start: first,
                tail: &tail,
            };
            read_cut(&parts, state.head, &marker, first, offset, limit)
        }
    }
}

/// The run log store for a database: in it on Postgres, where instances
/// share the database; files under the data dir (`files`) on SQLite.
pub fn for_store(
    store: &paperclip_store::Store,
    files: LocalFileLogStore,
) -> std::sync::Arc<dyn RunLogStore> {
    match store.backend() {
        paperclip_store::Backend::Postgres => {
            std::sync::Arc::new(PostgresLogStore::new(store.clone(), files))
        }
        paperclip_store::Backend::Sqlite => std::sync::Arc::new(files),
    }
}

mod db;
mod db_writer;
mod writer;
pub use db::{PostgresLogStore, FLUSH_EVERY};
use writer::{Bounds, FileWriter};

#[cfg(test)]
mod db_tests;
#[cfg(test)]
mod tests;
