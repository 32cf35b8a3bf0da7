//! Run logs: the full output of a run as NDJSON lines `{ts, stream, chunk, seq}`.
//! [`RunLogStore`] is the seam for object storage; [`LocalFileLogStore`]
//! keeps one file per run under the data dir.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;

use serde_json::json;

pub trait RunLogStore: Send + Sync {
    /// Name stored on the run as `logStore`.
    fn kind(&self) -> &'static str;
    /// Opens the log of a run for appending; the writer is used by one run only.
    fn writer(&self, company_id: &str, run_id: &str) -> std::io::Result<Box<dyn RunLogWriter>>;
    /// Reads a page of at most `limit` bytes from `offset` of a log by its
    /// `logRef` (see [`page_len`]).
    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<LogPage>;
}

/// Part of a run log, and where the next part starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPage {
    pub content: String,
    /// `offset` plus the bytes `content` was read from, so paging never
    /// skips or repeats a byte.
    pub next_offset: u64,
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

pub trait RunLogWriter: Send {
    /// Appends one line; returns bytes written.
    fn append(&mut self, stream: &str, chunk: &str, seq: u64) -> std::io::Result<u64>;
    fn log_ref(&self) -> String;
}

pub struct LocalFileLogStore {
    root: PathBuf,
}

impl LocalFileLogStore {
    pub fn new(root: PathBuf) -> LocalFileLogStore {
        LocalFileLogStore { root }
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
        Ok(Box::new(FileWriter {
            file: std::io::BufWriter::new(file),
            log_ref,
        }))
    }

    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<LogPage> {
        let empty = LogPage {
            content: String::new(),
            next_offset: offset,
        };
        let mut file = match std::fs::File::open(self.path(log_ref)?) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(empty),
            Err(e) => return Err(e),
        };
        // Reading at an offset past the end is empty, not an error (the OS
        // refuses reads whose end would pass i64::MAX).
        let len = file.metadata()?.len();
        if offset >= len {
            return Ok(empty);
        }
        // At least one whole character, however small the limit.
        let limit = limit.max(4);
        file.seek(SeekFrom::Start(offset))?;
        let mut buf = Vec::new();
        file.take(limit).read_to_end(&mut buf)?;
        let eof = offset + buf.len() as u64 >= len;
        Ok(page(&buf, offset, limit as usize, eof))
    }
}

struct FileWriter {
    file: std::io::BufWriter<std::fs::File>,
    log_ref: String,
}

impl RunLogWriter for FileWriter {
    fn append(&mut self, stream: &str, chunk: &str, seq: u64) -> std::io::Result<u64> {
        let mut line =
            json!({ "ts": paperclip_store::now(), "stream": stream, "chunk": chunk, "seq": seq })
                .to_string();
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        // Flushed per line so a reader (or a crash) sees everything written so far.
        self.file.flush()?;
        Ok(line.len() as u64)
    }

    fn log_ref(&self) -> String {
        self.log_ref.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_end_on_lines_or_characters() {
        assert_eq!(page_len(b"ab\ncd\nef", 8, false), 6);
        // A line still being written at the end waits.
        assert_eq!(page_len(b"ef", 8, true), 0);
        // A line longer than the page is cut between characters.
        let text = "\u{e9}\u{6f22}\u{1f600}".as_bytes();
        assert_eq!(page_len(&text[..4], 4, false), 2);
        assert_eq!(page_len(&text[..3], 3, false), 2);
        // Starting inside a character steps over it.
        assert_eq!(page_len(&text[1..5], 4, false), 1);
    }
}
