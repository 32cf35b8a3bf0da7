//! Writing a run's log to the database: the run's path only gathers lines
//! ([`Batch`], no I/O); one task per run writes them in order.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_store::runlogs::LogWrite;
use paperclip_store::Store;
use tokio::sync::{oneshot, watch, Notify};

use super::writer::{lines, Bounds};
use super::{marker_line, RunLogWriter};

/// How long a line waits at most before it is written: another instance
/// reading the run's log sees it within this and one query.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// The most bytes of lines one chunk row holds (a longer line is a row of
/// its own; lines are at most a quarter of a tail segment).
const CHUNK_BYTES: usize = 64 * 1024;
/// Waiting bytes that are written at once rather than at the next tick.
const URGENT_BYTES: usize = 256 * 1024;
/// How long `finish` waits for the last lines to be written.
const FINISH_WAIT: Duration = Duration::from_secs(60);
/// Attempts at writing a batch before it is given up (with a warning).
const ATTEMPTS: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Head,
    Tail,
}

struct Open {
    start: u64,
    part: Part,
    text: String,
}

/// The rolling tail: its chunks `(start, bytes)`, oldest first.
struct TailBook {
    head: u64,
    chunks: VecDeque<(u64, u64)>,
    bytes: u64,
}

/// What is waiting to be written, and the log's shape so far. Pure: the
/// writer fills it, the task empties it.
pub(super) struct Batch {
    bounds: Bounds,
    chunk_bytes: usize,
    /// Bytes of the whole log so far (the next line's offset).
    written: u64,
    ops: Vec<LogWrite>,
    open: Option<Open>,
    /// Bytes of lines waiting, in `ops` and `open`.
    waiting: usize,
    tail: Option<TailBook>,
    closing: bool,
    urgent: bool,
}

impl Batch {
    pub(super) fn new(bounds: Bounds) -> Batch {
        Batch {
            chunk_bytes: CHUNK_BYTES.min((bounds.segment / 4) as usize),
            bounds,
            written: 0,
            ops: Vec::new(),
            open: None,
            waiting: 0,
            tail: None,
            closing: false,
            urgent: false,
        }
    }

    fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.open.is_none()
    }

    fn close_open(&mut self) {
        if let Some(open) = self.open.take() {
            self.ops.push(LogWrite::Chunk {
                start: open.start,
                content: open.text,
            });
        }
    }

    /// Adds one line where the file store would write it: the head while
    /// it fits, else the tail, dropping the tail's oldest chunks past its
    /// share (two segments).
    pub(super) fn push_line(&mut self, line: String) {
        let len = line.len() as u64;
        if self.tail.is_none() && self.written + len <= self.bounds.head {
            self.append(Part::Head, line);
            return;
        }
        if self.tail.is_none() {
            self.close_open();
            self.ops.push(LogWrite::Cut {
                head: self.written,
                max_bytes: self.bounds.max,
            });
            self.tail = Some(TailBook {
                head: self.written,
                chunks: VecDeque::new(),
                bytes: 0,
            });
        }
        self.append(Part::Tail, line);
        let share = 2 * self.bounds.segment;
        let tail = self.tail.as_mut().expect("in the tail");
        let mut dropped = false;
        while tail.bytes > share && tail.chunks.len() > 1 {
            let (_, bytes) = tail.chunks.pop_front().expect("a chunk");
            tail.bytes -= bytes;
            dropped = true;
        }
        if !dropped {
            return;
        }
        let (head, tail_start) = (tail.head, tail.chunks.front().expect("a chunk").0);
        // Chunks dropped before they were written never go out; one drop
        // covers the ones before it.
        let mut freed = 0;
        self.ops.retain(|op| match op {
            LogWrite::Chunk { start, content } if *start >= head && *start < tail_start => {
                freed += content.len();
                false
            }
            LogWrite::Drop { .. } => false,
            _ => true,
        });
        self.waiting -= freed;
        self.ops.push(LogWrite::Drop { head, tail_start });
    }

    fn append(&mut self, part: Part, line: String) {
        let len = line.len();
        let fits = self
            .open
            .as_ref()
            .is_some_and(|o| o.part == part && o.text.len() + len <= self.chunk_bytes);
        if fits {
            self.open.as_mut().expect("open").text.push_str(&line);
        } else {
            self.close_open();
            self.open = Some(Open {
                start: self.written,
                part,
                text: line,
            });
            if let Some(tail) = self.tail.as_mut().filter(|_| part == Part::Tail) {
                tail.chunks.push_back((self.written, 0));
            }
        }
        if let Some(tail) = self.tail.as_mut().filter(|_| part == Part::Tail) {
            tail.chunks.back_mut().expect("a chunk").1 += len as u64;
            tail.bytes += len as u64;
        }
        self.written += len as u64;
        self.waiting += len;
    }

    /// Everything waiting, in order; the chunk being filled is closed.
    pub(super) fn take(&mut self) -> Vec<LogWrite> {
        self.close_open();
        self.waiting = 0;
        self.urgent = false;
        std::mem::take(&mut self.ops)
    }

    /// The run has ended: a cut log gets its marker and where its tail starts.
    pub(super) fn finish(&mut self) {
        self.close_open();
        if let Some(tail) = &self.tail {
            let tail_start = tail.chunks.front().map_or(self.written, |c| c.0);
            let omitted = tail_start - tail.head;
            let marker = (omitted > 0).then(|| (marker_line(omitted, self.bounds.max), tail_start));
            self.ops.push(LogWrite::Close { marker });
        }
        self.closing = true;
    }
}

struct Shared {
    batch: Mutex<Batch>,
    wake: Notify,
    /// The log's bytes written so far (after each batch).
    flushed: watch::Sender<u64>,
}

pub(crate) struct DbWriter {
    shared: Arc<Shared>,
    log_ref: String,
    bounds: Bounds,
    done: Option<oneshot::Receiver<()>>,
}

impl DbWriter {
    pub(super) fn open(
        handle: &tokio::runtime::Handle,
        store: Store,
        run_id: String,
        log_ref: String,
        bounds: Bounds,
    ) -> DbWriter {
        let shared = Arc::new(Shared {
            batch: Mutex::new(Batch::new(bounds)),
            wake: Notify::new(),
            flushed: watch::channel(0).0,
        });
        let (done_tx, done) = oneshot::channel();
        handle.spawn(insert(store, run_id, shared.clone(), done_tx));
        DbWriter {
            shared,
            log_ref,
            bounds,
            done: Some(done),
        }
    }

    /// Writes what is waiting now and waits until it is (tests).
    #[cfg(test)]
    pub(crate) async fn flush(&self) {
        let target = {
            let mut batch = self.shared.batch.lock().expect("batch lock");
            batch.urgent = true;
            batch.written
        };
        let mut flushed = self.shared.flushed.subscribe();
        self.shared.wake.notify_one();
        let _ = flushed.wait_for(|at| *at >= target).await;
    }
}

/// The run's writing task: waits for lines, gives more a moment to come,
/// writes them in one transaction; ends after the last batch.
async fn insert(store: Store, run_id: String, shared: Arc<Shared>, done: oneshot::Sender<()>) {
    loop {
        shared.wake.notified().await;
        let urgent = {
            let batch = shared.batch.lock().expect("batch lock");
            batch.closing || batch.urgent || batch.waiting >= URGENT_BYTES
        };
        if !urgent {
            tokio::select! {
                _ = tokio::time::sleep(FLUSH_EVERY) => {}
                _ = shared.wake.notified() => {}
            }
        }
        let (ops, written, closing) = {
            let mut batch = shared.batch.lock().expect("batch lock");
            (batch.take(), batch.written, batch.closing)
        };
        write(&store, &run_id, &ops).await;
        shared.flushed.send_replace(written);
        if closing {
            break;
        }
    }
    let _ = done.send(());
}

async fn write(store: &Store, run_id: &str, ops: &[LogWrite]) {
    let mut wait = Duration::from_millis(200);
    for attempt in 1..=ATTEMPTS {
        match paperclip_store::runlogs::write(store, run_id, ops).await {
            Ok(()) => return,
            Err(err) if attempt == ATTEMPTS => {
                tracing::warn!(run = %run_id, error = %err, "run log lines not written");
            }
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait *= 2;
            }
        }
    }
}

impl RunLogWriter for DbWriter {
    fn append(&mut self, stream: &str, chunk: &str, seq: u64) -> std::io::Result<u64> {
        let lines = lines(&self.bounds, stream, chunk, seq);
        let mut n = 0;
        let wake = {
            let mut batch = self.shared.batch.lock().expect("batch lock");
            let was_empty = batch.is_empty();
            for line in lines {
                n += line.len() as u64;
                batch.push_line(line);
            }
            was_empty || batch.waiting >= URGENT_BYTES
        };
        if wake {
            self.shared.wake.notify_one();
        }
        Ok(n)
    }

    fn log_ref(&self) -> String {
        self.log_ref.clone()
    }

    fn finish(&mut self) -> std::io::Result<()> {
        let Some(done) = self.done.take() else {
            return Ok(());
        };
        self.shared.batch.lock().expect("batch lock").finish();
        self.shared.wake.notify_one();
        match super::db::block(tokio::time::timeout(FINISH_WAIT, done))? {
            Ok(_) => Ok(()),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the run log's last lines were not written in time",
            )),
        }
    }
}

impl Drop for DbWriter {
    fn drop(&mut self) {
        // Not finished (the run was dropped at shutdown): what is waiting is
        // still written, and the task ends.
        if self.done.is_some() {
            self.shared.batch.lock().expect("batch lock").closing = true;
            self.shared.wake.notify_one();
        }
    }
}
