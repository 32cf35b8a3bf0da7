//! Shared by the adapter integration tests: a sink that records everything.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_adapters::{CancellationToken, Invocation, RunSink, Stream, UsageSoFar};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Event {
    pub event_type: String,
    pub level: String,
    pub message: String,
    pub payload: Value,
}

#[derive(Default)]
pub struct RecordingSink {
    pub logs: Mutex<Vec<(Stream, String)>>,
    pub events: Mutex<Vec<Event>>,
    pub started: Mutex<Option<(u32, u32)>>,
    pub usage: Mutex<Vec<UsageSoFar>>,
}

impl RecordingSink {
    pub fn new() -> Arc<RecordingSink> {
        Arc::new(RecordingSink::default())
    }

    /// Everything written to one stream, concatenated in arrival order.
    pub fn text(&self, stream: Stream) -> String {
        let logs = self.logs.lock().unwrap();
        logs.iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, c)| c.as_str())
            .collect()
    }

    pub fn events_of(&self, event_type: &str) -> Vec<Event> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|e| e.event_type == event_type)
            .cloned()
            .collect()
    }

    /// Polls until `stream` contains a complete line satisfying `pick`.
    pub async fn wait_for_line<T>(&self, stream: Stream, pick: impl Fn(&str) -> Option<T>) -> T {
        let give_up = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.text(stream);
            if let Some(found) = text.lines().find_map(&pick) {
                return found;
            }
            assert!(
                tokio::time::Instant::now() < give_up,
                "no matching line; {stream:?} so far: {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl RunSink for RecordingSink {
    fn log(&self, stream: Stream, chunk: &str) {
        self.logs.lock().unwrap().push((stream, chunk.to_string()));
    }

    fn event(&self, event_type: &str, level: &str, message: &str, payload: Value) {
        self.events.lock().unwrap().push(Event {
            event_type: event_type.into(),
            level: level.into(),
            message: message.into(),
            payload,
        });
    }

    fn process_started(&self, pid: u32, process_group_id: u32) {
        *self.started.lock().unwrap() = Some((pid, process_group_id));
    }

    fn usage(&self, usage: &UsageSoFar) {
        self.usage.lock().unwrap().push(usage.clone());
    }
}

/// A fresh directory under the system temp dir, unique per call.
pub fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::env::temp_dir().join(format!(
        "paperclip-adapters-{tag}-{}-{n}",
        std::process::id()
    ))
}

pub fn invocation(config: Value) -> Invocation {
    Invocation {
        run_id: "run-1".into(),
        agent_id: "agent-1".into(),
        agent_name: "Agent One".into(),
        company_id: "company-1".into(),
        config,
        env: BTreeMap::from([
            ("PAPERCLIP_RUN_ID".to_string(), "run-1".to_string()),
            ("PAPERCLIP_API_KEY".to_string(), "secret-key".to_string()),
        ]),
        prompt: None,
        context: json!({"issueId": "ISS-7", "count": 4, "nested": {"a": 1}}),
        // Shared so test runs do not litter the temp dir; creating it is idempotent.
        default_cwd: std::env::temp_dir().join("paperclip-adapters-test-cwd"),
        cancel: CancellationToken::new(),
        stop_now: CancellationToken::new(),
        session_id: None,
        skills_dir: None,
    }
}
