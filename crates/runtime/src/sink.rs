//! What a running adapter reports into: redaction first, then the run log,
//! the excerpts kept on the run row, the event timeline and the live hub.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use paperclip_adapters::{RunSink, Stream, UsageSoFar};
use paperclip_core::model::HeartbeatRun;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::budget::RunBudget;
use crate::hub::Hub;
use crate::live::LiveRuns;
use crate::logs::{RunLogStore, RunLogWriter};
use crate::redact::{Redactor, StreamRedactor};

/// Bytes of each stream kept on the run row for the UI's first look.
const EXCERPT_BYTES: usize = 8 * 1024;
/// Largest chunk sent over live events; the full text is in the log.
const LIVE_CHUNK_BYTES: usize = 4 * 1024;
/// How often a running run's last output is written to its row: often
/// enough to tell a silent run from a busy one, rarely enough that a chatty
/// agent does not queue a write per chunk behind the writer lock.
const OUTPUT_FLUSH: std::time::Duration = std::time::Duration::from_secs(10);

/// What a sink writes to: the store, the live hub, the run logs, and the
/// live runs (which learn the processes a run spawns).
#[derive(Clone)]
pub(crate) struct SinkDeps {
    pub store: paperclip_store::Store,
    pub hub: Arc<Hub>,
    pub logs: Arc<dyn RunLogStore>,
    pub live: Arc<LiveRuns>,
}

pub(crate) struct RunSinkImpl {
    deps: SinkDeps,
    run: HeartbeatRun,
    redactor: Redactor,
    /// Per output stream, so a secret split across writes is still caught.
    stdout_redactor: Mutex<StreamRedactor>,
    stderr_redactor: Mutex<StreamRedactor>,
    writer: Mutex<Option<Box<dyn RunLogWriter>>>,
    log_ref: Option<String>,
    seq: AtomicU64,
    bytes: AtomicU64,
    stdout: Mutex<Tail>,
    stderr: Mutex<Tail>,
    events: Mutex<Option<mpsc::UnboundedSender<EventRow>>>,
    event_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Checks the run's streamed cost against its budgets.
    budget: Arc<RunBudget>,
    /// The agent's latest output, and when the row last got it.
    output: Mutex<OutputProgress>,
}

#[derive(Default)]
struct OutputProgress {
    latest: Option<paperclip_store::runs::LastOutput>,
    flushed_at: Option<std::time::Instant>,
}

struct EventRow {
    event_type: String,
    stream: Option<String>,
    level: String,
    message: String,
    payload: Value,
}

pub(crate) struct Stats {
    pub stdout_excerpt: Option<String>,
    pub stderr_excerpt: Option<String>,
    pub log_ref: Option<String>,
    pub log_bytes: u64,
}

impl RunSinkImpl {
    pub(crate) fn new(
        deps: SinkDeps,
        run: HeartbeatRun,
        redactor: Redactor,
        budget: RunBudget,
    ) -> std::io::Result<RunSinkImpl> {
        let writer = deps.logs.writer(&run.company_id, &run.id)?;
        let log_ref = Some(writer.log_ref());
        // Timeline rows are written in order by one task per run, so `seq`
        // follows the order the adapter reported in without blocking it.
        let (tx, mut rx) = mpsc::unbounded_channel::<EventRow>();
        let store = deps.store.clone();
        let for_task = run.clone();
        let task = tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                let payload = (!e.payload.is_null()).then_some(e.payload);
                if let Err(err) = paperclip_store::runs::append_event(
                    &store,
                    &for_task,
                    &e.event_type,
                    e.stream.as_deref(),
                    &e.level,
                    &e.message,
                    payload,
                )
                .await
                {
                    tracing::warn!(run = %for_task.id, error = %err, "run event not recorded");
                }
            }
        });
        Ok(RunSinkImpl {
            deps,
            run,
            stdout_redactor: Mutex::new(redactor.stream()),
            stderr_redactor: Mutex::new(redactor.stream()),
            redactor,
            writer: Mutex::new(Some(writer)),
            log_ref,
            seq: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            stdout: Mutex::new(Tail::default()),
            stderr: Mutex::new(Tail::default()),
            events: Mutex::new(Some(tx)),
            event_task: Mutex::new(Some(task)),
            budget: Arc::new(budget),
            output: Mutex::new(OutputProgress::default()),
        })
    }

    /// Flushes the timeline and closes the log; returns what the run row keeps.
    pub(crate) async fn close(&self) -> Stats {
        // Text held back as a possible secret prefix is released, redacted.
        for stream in [Stream::Stdout, Stream::Stderr] {
            let rest = self
                .stream_redactor(stream)
                .map(|r| r.lock().expect("redactor lock").finish());
            if let Some(rest) = rest.filter(|r| !r.is_empty()) {
                self.write(stream, rest);
            }
        }
        self.events.lock().expect("events lock").take();
        let task = self.event_task.lock().expect("task lock").take();
        if let Some(task) = task {
            let _ = task.await;
        }
        // A log cut for its size gets its marker and tail now; a log in the
        // database waits for its last lines: off the async workers.
        let writer = self.writer.lock().expect("writer lock").take();
        if let Some(mut writer) = writer {
            match tokio::task::spawn_blocking(move || writer.finish()).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => {
                    tracing::warn!(run = %self.run.id, error = %err, "run log not closed")
                }
                Err(err) => {
                    tracing::warn!(run = %self.run.id, error = %err, "run log not closed")
                }
            }
        }
        // Written even if a throttled write of the same chunk was sent: that
        // one may still be in flight, and the run's verdict reads this row
        // next. The store ignores an update that is not newer.
        let last = self.output.lock().expect("output lock").latest.clone();
        if let Some(last) = last {
            if let Err(err) =
                paperclip_store::runs::set_last_output(&self.deps.store, &self.run.id, &last).await
            {
                tracing::warn!(run = %self.run.id, error = %err, "last output not recorded");
            }
        }
        Stats {
            stdout_excerpt: self.stdout.lock().expect("tail lock").excerpt(),
            stderr_excerpt: self.stderr.lock().expect("tail lock").excerpt(),
            log_ref: self.log_ref.clone(),
            log_bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

impl RunSinkImpl {
    fn stream_redactor(&self, stream: Stream) -> Option<&Mutex<StreamRedactor>> {
        match stream {
            Stream::Stdout => Some(&self.stdout_redactor),
            Stream::Stderr => Some(&self.stderr_redactor),
            Stream::System => None,
        }
    }

    /// Appends already redacted text to the log, the excerpt and live events.
    fn write(&self, stream: Stream, chunk: String) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(writer) = self.writer.lock().expect("writer lock").as_mut() {
            match writer.append(stream.as_str(), &chunk, seq) {
                Ok(n) => {
                    let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
                    if stream != Stream::System {
                        self.note_output(stream, seq, total);
                    }
                }
                Err(err) => {
                    tracing::warn!(run = %self.run.id, error = %err, "run log write failed")
                }
            }
        }
        match stream {
            Stream::Stdout => self.stdout.lock().expect("tail lock").push(&chunk),
            Stream::Stderr => self.stderr.lock().expect("tail lock").push(&chunk),
            Stream::System => {}
        }
        let live: String = if chunk.len() > LIVE_CHUNK_BYTES {
            let mut cut = LIVE_CHUNK_BYTES;
            while !chunk.is_char_boundary(cut) {
                cut -= 1;
            }
            format!("{}…", &chunk[..cut])
        } else {
            chunk
        };
        self.deps.hub.publish(
            &self.run.company_id,
            "heartbeat.run.log",
            "heartbeat_run",
            &self.run.id,
            json!({ "runId": self.run.id, "agentId": self.run.agent_id, "stream": stream.as_str(), "chunk": live, "seq": seq }),
        );
    }
}

impl RunSinkImpl {
    /// Remembers the agent's latest output; the first one and then one every
    /// [`OUTPUT_FLUSH`] go to the run row now, the last one at `close`.
    fn note_output(&self, stream: Stream, seq: u64, total_bytes: u64) {
        let latest = paperclip_store::runs::LastOutput {
            at: paperclip_store::now(),
            seq: seq as i64,
            stream: stream.as_str(),
            bytes: total_bytes as i64,
        };
        let mut progress = self.output.lock().expect("output lock");
        progress.latest = Some(latest.clone());
        if progress
            .flushed_at
            .is_some_and(|at| at.elapsed() < OUTPUT_FLUSH)
        {
            return;
        }
        progress.flushed_at = Some(std::time::Instant::now());
        drop(progress);
        let store = self.deps.store.clone();
        let run_id = self.run.id.clone();
        tokio::spawn(async move {
            if let Err(err) = paperclip_store::runs::set_last_output(&store, &run_id, &latest).await
            {
                tracing::warn!(run = %run_id, error = %err, "last output not recorded");
            }
        });
    }
}

impl RunSink for RunSinkImpl {
    fn log(&self, stream: Stream, chunk: &str) {
        // System lines are written whole by us, so they redact on their own.
        let chunk = match self.stream_redactor(stream) {
            Some(r) => r.lock().expect("redactor lock").push(chunk),
            None => self.redactor.apply(chunk),
        };
        if !chunk.is_empty() {
            self.write(stream, chunk);
        }
    }

    fn event(&self, event_type: &str, level: &str, message: &str, payload: Value) {
        let row = EventRow {
            event_type: event_type.to_string(),
            stream: None,
            level: level.to_string(),
            message: self.redactor.apply(message),
            payload: self.redactor.apply_json(&payload),
        };
        if let Some(tx) = self.events.lock().expect("events lock").as_ref() {
            let _ = tx.send(row);
        }
    }

    fn usage(&self, usage: &UsageSoFar) {
        self.budget.observe(usage);
    }

    /// On the timeline (the run page, the agent's card read the latest) and
    /// live, as `heartbeat.run.status` with the message and its colour.
    fn status(&self, update: &paperclip_core::run_status::StatusUpdate) {
        let message = self.redactor.apply(&update.message);
        let color = update.color.map(|c| c.as_str());
        self.event(
            paperclip_core::run_status::RunEventType::AdapterStatus.as_str(),
            "info",
            &message,
            json!({ "color": color }),
        );
        self.deps.hub.publish(
            &self.run.company_id,
            "heartbeat.run.status",
            "heartbeat_run",
            &self.run.id,
            json!({ "runId": self.run.id, "agentId": self.run.agent_id, "status": "running",
                    "issueId": self.run.issue_id, "message": message, "color": color }),
        );
    }

    fn process_started(&self, pid: u32, process_group_id: u32) {
        let store = self.deps.store.clone();
        let run_id = self.run.id.clone();
        // Read now, while the leader surely is the process just spawned.
        let ticks = paperclip_adapters::tree::start_ticks(pid as i32);
        // Before anything else: from now on a request from this process, or
        // any it starts, is known to come from inside the run.
        self.deps.live.process_started(&run_id, pid, ticks);
        let start = paperclip_adapters::tree::start_ticks(process_group_id as i32)
            .map(|t| (t, paperclip_adapters::tree::ticks_to_time(t)));
        tokio::spawn(async move {
            if let Err(err) =
                paperclip_store::runs::set_process(&store, &run_id, pid, process_group_id, start)
                    .await
            {
                tracing::warn!(run = %run_id, error = %err, "process id not recorded");
            }
        });
    }
}

/// The last [`EXCERPT_BYTES`] of a stream, remembering how much was dropped.
#[derive(Default)]
struct Tail {
    text: String,
    dropped: usize,
}

impl Tail {
    fn push(&mut self, chunk: &str) {
        self.text.push_str(chunk);
        if self.text.len() > EXCERPT_BYTES {
            let mut cut = self.text.len() - EXCERPT_BYTES;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.dropped += cut;
            self.text.drain(..cut);
        }
    }

    fn excerpt(&self) -> Option<String> {
        if self.text.is_empty() {
            return None;
        }
        Some(if self.dropped > 0 {
            format!(
                "[… {} earlier bytes truncated …]\n{}",
                self.dropped, self.text
            )
        } else {
            self.text.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_keep_the_tail_and_mark_truncation() {
        let mut tail = Tail::default();
        tail.push("short");
        assert_eq!(tail.excerpt().unwrap(), "short");
        tail.push(&"x".repeat(EXCERPT_BYTES));
        let excerpt = tail.excerpt().unwrap();
        assert!(excerpt.starts_with("[… 5 earlier bytes truncated …]"));
        assert!(excerpt.ends_with(&"x".repeat(100)));
    }
}
