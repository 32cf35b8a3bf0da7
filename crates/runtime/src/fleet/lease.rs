//! The lease loop: renews this instance's lease, lets go of runs another
//! instance settled or took over, takes over the runs of instances whose
//! lease expired, and at shutdown gives the lease up so survivors take over
//! at once instead of after the lease.

use std::time::Duration;

use paperclip_store::fleet::{bus, instances};

use super::Identity;
use crate::Runtime;

/// Passes between the housekeeping of forgotten instances and spilled events.
const HOUSEKEEPING_EVERY: u32 = 120;
/// How long a stopped or expired instance is remembered.
const FORGET_AFTER: Duration = Duration::from_secs(24 * 3600);

pub(crate) async fn run(runtime: Runtime, me: Identity, lease: Duration) {
    let store = runtime.inner.store.clone();
    let lifecycle = runtime.lifecycle();
    let every = lease / 6;
    let mut pass: u32 = 0;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = lifecycle.stopping() => break,
        }
        if let Err(err) = renew(&runtime, &me, lease).await {
            tracing::warn!(error = %err, "renewing this instance's lease failed");
        }
        runtime.let_go_of_lost_runs(&me).await;
        match crate::recovery::settle_lost(&store, &me, false).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(
                    runs = n,
                    "took over runs of an instance whose lease expired"
                );
                runtime.kick();
            }
            Err(err) => tracing::warn!(error = %err, "sweeping for lost runs failed"),
        }
        pass = pass.wrapping_add(1);
        if pass % HOUSEKEEPING_EVERY == 0 {
            let _ = instances::prune(&store, FORGET_AFTER).await;
            let _ = bus::sweep_spill(&store).await;
        }
    }
    // The runs in flight are being dropped (their processes killed) by the
    // same shutdown: whoever sweeps next settles them.
    if let Err(err) = instances::release(&store, &me.id, &me.incarnation).await {
        tracing::warn!(error = %err, "giving up this instance's lease failed");
    }
}

async fn renew(runtime: &Runtime, me: &Identity, lease: Duration) -> anyhow::Result<()> {
    let store = &runtime.inner.store;
    if instances::renew(store, &me.id, &me.incarnation, lease).await? {
        return Ok(());
    }
    let row = instances::list(store)
        .await?
        .into_iter()
        .find(|i| i.id == me.id);
    match row {
        Some(other) if other.incarnation != me.incarnation => {
            // Two processes configured with one id: each would take the
            // other's runs for its own. Refuse to fight over the row.
            tracing::error!(
                id = %me.id, other_host = %other.hostname, other_pid = other.pid,
                "another process runs under this instance id: give each instance its own id (PAPERCLIP_INSTANCE_ID)"
            );
        }
        _ => {
            // The lease ran out (a stall, the database out of reach):
            // survivors may have taken runs of ours, which the next step
            // lets go of. Take a new lease and go on.
            tracing::warn!(id = %me.id, "this instance's lease had expired; registering again");
            let current = instances::Instance {
                id: me.id.clone(),
                incarnation: me.incarnation.clone(),
                hostname: me.hostname.clone(),
                pid: std::process::id() as i64,
                version: env!("CARGO_PKG_VERSION").into(),
                started_at: paperclip_store::now(),
                renewed_at: paperclip_store::now(),
                lease_expires_at: paperclip_store::now(),
                stopped_at: None,
            };
            instances::register(store, &current, lease).await?;
        }
    }
    Ok(())
}

impl Runtime {
    /// Drops the runs this instance drives whose rows are no longer its own
    /// (another instance settled them, a stop through another instance, or
    /// a takeover while this one had lost its lease): their processes are
    /// killed and nothing is recorded here.
    async fn let_go_of_lost_runs(&self, me: &Identity) {
        let ids = self.inner.live.ids();
        match instances::not_mine(&self.inner.store, &me.id, &ids).await {
            Ok(gone) => {
                for id in gone {
                    if self.inner.live.abandon(&id) {
                        tracing::warn!(run = %id, "letting go of a run settled or taken over elsewhere");
                    }
                }
            }
            Err(err) => tracing::warn!(error = %err, "checking this instance's runs failed"),
        }
    }
}
