//! Due task monitors: on the timer's pass, each task whose monitor is due
//! wakes its assignee agent with `issue_monitor_due` (or ends the monitor
//! past its bounds). The store's conditional claim and the wake's
//! idempotency key fire a monitor once across instances.

use chrono::{DateTime, Utc};
use paperclip_core::actor::Actor;
use paperclip_store::issues::monitors::{self, Fired};
use paperclip_store::{Error, Store};

/// One pass: fires every due monitor; how many woke their agent.
pub async fn tick(store: &Store, now: DateTime<Utc>) -> anyhow::Result<usize> {
    let mut woken = 0;
    for id in monitors::due(store, now).await? {
        match monitors::fire(store, &Actor::system(), &id, now, false).await {
            Ok(Fired::Triggered) => woken += 1,
            Ok(Fired::Exhausted(_)) => {}
            // Another instance fired it, or the task changed meanwhile.
            Err(Error::Conflict { .. } | Error::NotFound(_)) => {}
            Err(err) => tracing::warn!(error = %err, issue = %id, "issue monitor tick failed"),
        }
    }
    Ok(woken)
}
