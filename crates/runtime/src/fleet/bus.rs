//! Live events across instances (Postgres): every event this instance's hub
//! publishes is sent on the bus by one sender on one connection, in order;
//! every event another instance sent is published into this hub. A
//! subscriber on any instance so sees every event of its company, in the
//! order its instance made them (per run: the order the run's driver
//! published them).

use std::sync::Arc;
use std::time::Duration;

use paperclip_store::fleet::bus;
use paperclip_store::Store;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::hub::{Hub, LiveEvent, RemoteEvent};

/// Events waiting for the sender; past it the hub drops (and counts) them
/// rather than slow a run's output down.
const QUEUE: usize = 8192;

#[derive(Deserialize)]
struct Envelope {
    /// The instance that made the event.
    o: String,
    /// The event, as its hub serialised it.
    e: Option<RemoteEvent>,
    /// A spilled event's id, when it was too large to carry.
    #[serde(rename = "ref")]
    spill: Option<String>,
}

/// Connects the bus (Postgres only) and returns its two loops, to be
/// spawned: listening starts before this returns, so nothing published
/// after it is missed.
pub(crate) async fn connect(
    store: &Store,
    hub: Arc<Hub>,
    me: String,
) -> anyhow::Result<Option<impl std::future::Future<Output = ()> + Send + 'static>> {
    let Some(sender) = bus::sender(store).await? else {
        return Ok(None);
    };
    let Some(listener) = bus::listener(store).await? else {
        return Ok(None);
    };
    let (tx, rx) = mpsc::channel(QUEUE);
    hub.forward_to(tx);
    let send = send_loop(store.clone(), sender, rx, me.clone());
    let listen = listen_loop(store.clone(), listener, hub, me);
    Ok(Some(async move {
        tokio::join!(send, listen);
    }))
}

async fn send_loop(
    store: Store,
    mut sender: bus::Sender,
    mut events: mpsc::Receiver<Arc<LiveEvent>>,
    me: String,
) {
    let origin = serde_json::to_string(&me).expect("a string serialises");
    while let Some(event) = events.recv().await {
        let payload = format!("{{\"o\":{origin},\"e\":{}}}", event.json);
        while let Err(err) = sender.send(&me, &payload).await {
            tracing::warn!(error = %err, "sending a live event to other instances failed; reconnecting");
            tokio::time::sleep(Duration::from_millis(500)).await;
            match bus::sender(&store).await {
                Ok(Some(fresh)) => sender = fresh,
                Ok(None) => return,
                Err(_) => continue,
            }
        }
    }
}

async fn listen_loop(store: Store, mut listener: bus::Listener, hub: Arc<Hub>, me: String) {
    loop {
        let note = match listener.recv().await {
            Ok(note) => note,
            Err(err) => {
                // PgListener reconnects on the next recv.
                tracing::warn!(error = %err, "the live-event bus connection failed");
                // Writes made elsewhere meanwhile go unheard.
                store.changed_elsewhere(None);
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let Ok(envelope) = serde_json::from_str::<Envelope>(note.payload()) else {
            tracing::warn!("an unreadable live event on the bus");
            continue;
        };
        if envelope.o == me {
            continue;
        }
        let event = match (envelope.e, envelope.spill) {
            (Some(event), _) => Some(event),
            (None, Some(id)) => match bus::spilled(&store, &id).await {
                Ok(Some(body)) => serde_json::from_str::<SpilledEnvelope>(&body)
                    .ok()
                    .map(|s| s.e),
                _ => None,
            },
            (None, None) => None,
        };
        match event {
            Some(event) => {
                // Another instance wrote to the company: task pages kept
                // here are stale.
                store.changed_elsewhere(Some(&event.company_id));
                hub.publish_remote(event)
            }
            None => tracing::warn!("a live event from another instance could not be read"),
        }
    }
}

#[derive(Deserialize)]
struct SpilledEnvelope {
    e: RemoteEvent,
}
