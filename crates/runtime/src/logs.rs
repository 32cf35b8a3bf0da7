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
    /// Reads up to `limit` bytes from `offset` of a log by its `logRef`.
    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<String>;
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

    fn read(&self, log_ref: &str, offset: u64, limit: u64) -> std::io::Result<String> {
        let mut file = match std::fs::File::open(self.path(log_ref)?) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
            Err(e) => return Err(e),
        };
        // Reading at an offset past the end is empty, not an error (the OS
        // refuses reads whose end would pass i64::MAX).
        if offset >= file.metadata()?.len() {
            return Ok(String::new());
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut buf = Vec::new();
        file.take(limit).read_to_end(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
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
