//! The live event hub: per-company streams with a bounded replay buffer, so a
//! client that reconnects with the last event id it saw gets what it missed.

use paperclip_core::activity::Action;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use paperclip_core::model::ActivityEntry;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

/// Events kept per company for replay on reconnect.
pub const REPLAY: usize = 1000;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveEvent {
    pub event_id: u64,
    pub company_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub entity_type: String,
    pub entity_id: String,
    pub occurred_at: String,
    pub payload: Value,
    /// The envelope as JSON, serialised once at publish for every subscriber.
    #[serde(skip)]
    pub json: String,
}

/// An event as another instance published it (its id there is not kept).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteEvent {
    pub company_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub entity_type: String,
    pub entity_id: String,
    pub occurred_at: String,
    pub payload: Value,
}

#[derive(Default)]
struct Channel {
    buffer: VecDeque<Arc<LiveEvent>>,
    sender: Option<broadcast::Sender<Arc<LiveEvent>>>,
}

pub struct Hub {
    next_id: AtomicU64,
    channels: Mutex<HashMap<String, Channel>>,
    /// Where events made here go to reach other instances (Postgres: the
    /// fleet's bus); unset with one instance.
    forward: OnceLock<mpsc::Sender<Arc<LiveEvent>>>,
    /// Events the bus could not take (its queue full): other instances
    /// miss them; their clients refetch on the next event.
    forward_dropped: AtomicU64,
}

/// A subscription: what was missed since `last_event_id`, then the live stream.
pub struct Subscription {
    pub missed: Vec<Arc<LiveEvent>>,
    /// True when events older than the buffer were asked for: the client should refetch.
    pub gap: bool,
    pub live: broadcast::Receiver<Arc<LiveEvent>>,
}

impl Default for Hub {
    fn default() -> Hub {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        // Event ids start from the clock so they keep increasing across restarts
        // and a client's Last-Event-ID from before a restart is never "in the future".
        let start = chrono::Utc::now().timestamp_millis().max(1) as u64 * 1000;
        Hub {
            next_id: AtomicU64::new(start),
            channels: Mutex::new(HashMap::new()),
            forward: OnceLock::new(),
            forward_dropped: AtomicU64::new(0),
        }
    }

    /// The id of the newest event published so far: a page rendered now
    /// subscribes after it, and the hub replays whatever came between.
    pub fn position(&self) -> u64 {
        self.next_id.load(Ordering::Relaxed).saturating_sub(1)
    }

    pub fn publish(
        &self,
        company_id: &str,
        kind: &str,
        entity_type: &str,
        entity_id: &str,
        payload: Value,
    ) {
        let event = self.append(
            company_id,
            kind,
            entity_type,
            entity_id,
            paperclip_store::now(),
            payload,
        );
        if let Some(forward) = self.forward.get() {
            if forward.try_send(event).is_err() {
                self.forward_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Publishes here an event another instance made (it came over the
    /// bus): it gets an id of this hub's and is not sent back.
    pub fn publish_remote(&self, event: RemoteEvent) {
        self.append(
            &event.company_id,
            &event.kind,
            &event.entity_type,
            &event.entity_id,
            event.occurred_at,
            event.payload,
        );
    }

    /// Sends every event published here from now on to `forward` too.
    pub fn forward_to(&self, forward: mpsc::Sender<Arc<LiveEvent>>) {
        let _ = self.forward.set(forward);
    }

    /// Events other instances missed because the bus was full.
    pub fn forward_dropped(&self) -> u64 {
        self.forward_dropped.load(Ordering::Relaxed)
    }

    fn append(
        &self,
        company_id: &str,
        kind: &str,
        entity_type: &str,
        entity_id: &str,
        occurred_at: String,
        payload: Value,
    ) -> Arc<LiveEvent> {
        let mut channels = self.channels.lock().expect("hub lock");
        let channel = channels.entry(company_id.to_string()).or_default();
        let mut event = LiveEvent {
            event_id: self.next_id.fetch_add(1, Ordering::Relaxed),
            company_id: company_id.to_string(),
            kind: kind.to_string(),
            entity_type: entity_type.to_string(),
            entity_id: entity_id.to_string(),
            occurred_at,
            payload,
            json: String::new(),
        };
        event.json = serde_json::to_string(&event).expect("events serialize");
        let event = Arc::new(event);
        if channel.buffer.len() == REPLAY {
            channel.buffer.pop_front();
        }
        channel.buffer.push_back(event.clone());
        if let Some(sender) = &channel.sender {
            let _ = sender.send(event.clone());
        }
        event
    }

    /// Open live streams (SSE and WebSocket) across every company, for `/metrics`.
    pub fn subscribers(&self) -> usize {
        let channels = self.channels.lock().expect("hub lock");
        channels
            .values()
            .filter_map(|c| c.sender.as_ref())
            .map(broadcast::Sender::receiver_count)
            .sum()
    }

    pub fn subscribe(&self, company_id: &str, last_event_id: Option<u64>) -> Subscription {
        let mut channels = self.channels.lock().expect("hub lock");
        let channel = channels.entry(company_id.to_string()).or_default();
        let sender = channel
            .sender
            .get_or_insert_with(|| broadcast::channel(REPLAY).0);
        let live = sender.subscribe();
        let (missed, gap) = match last_event_id {
            Some(last) => {
                let oldest = channel.buffer.front().map(|e| e.event_id);
                let gap = oldest.is_some_and(|oldest| last + 1 < oldest)
                    && channel.buffer.len() == REPLAY;
                (
                    channel
                        .buffer
                        .iter()
                        .filter(|e| e.event_id > last)
                        .cloned()
                        .collect(),
                    gap,
                )
            }
            None => (Vec::new(), false),
        };
        Subscription { missed, gap, live }
    }

    /// Turns a committed activity row into its live events: always
    /// `activity.appended`, plus the typed event a page listens for.
    pub fn publish_activity(&self, entry: &ActivityEntry) {
        let typed = match Action::parse(&entry.action) {
            Some(Action::IssueCommentAdded) => Some("issue.comment.created"),
            Some(Action::IssueCreated) => Some("issue.created"),
            Some(Action::AgentCreated) => Some("agent.created"),
            Some(Action::AgentPaused | Action::AgentResumed | Action::AgentTerminated) => {
                Some("agent.status.changed")
            }
            // Board-posted entries may name actions of their own.
            _ if entry.action.starts_with("issue.") => Some("issue.updated"),
            _ if entry.action.starts_with("agent.") => Some("agent.updated"),
            _ => None,
        };
        if let Some(kind) = typed {
            self.publish(
                &entry.company_id,
                kind,
                &entry.entity_type,
                &entry.entity_id,
                entry.details.clone(),
            );
        }
        let payload = serde_json::to_value(entry).unwrap_or(Value::Null);
        self.publish(
            &entry.company_id,
            "activity.appended",
            "activity",
            &entry.id,
            payload,
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reconnecting_replays_what_was_missed_in_order() {
        let hub = Hub::new();
        hub.publish("c1", "a", "issue", "1", json!({}));
        let first = hub.subscribe("c1", None);
        assert!(first.missed.is_empty());
        hub.publish("c1", "b", "issue", "2", json!({}));
        hub.publish("c2", "other", "issue", "3", json!({}));
        hub.publish("c1", "c", "issue", "4", json!({}));
        let all = hub.subscribe("c1", Some(0));
        let kinds: Vec<&str> = all.missed.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["a", "b", "c"],
            "another company's events are not replayed"
        );
        let after_b = hub.subscribe("c1", Some(all.missed[1].event_id));
        assert_eq!(after_b.missed.len(), 1);
        assert_eq!(after_b.missed[0].kind, "c");
    }

    #[test]
    fn the_buffer_is_bounded_and_reports_a_gap() {
        let hub = Hub::new();
        for i in 0..(REPLAY + 10) {
            hub.publish("c1", "tick", "x", &i.to_string(), json!({}));
        }
        let sub = hub.subscribe("c1", Some(1));
        assert_eq!(sub.missed.len(), REPLAY);
        assert!(sub.gap);
    }
}
