//! Timer heartbeats: agents whose policy enables them are woken every
//! `intervalSec` (at least 30 s) while they have no run queued or running.

use std::sync::Arc;
use std::time::Duration;

use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::{HeartbeatPolicy, WakeSource};
use paperclip_store::wakes::{self, Wake};
use paperclip_store::Store;

use crate::routines::Clock;

/// Timer granularity. Intervals are 30 s or more, so a 5 s tick keeps timers
/// within a few seconds of due while costing one small query per tick.
const TICK: Duration = Duration::from_secs(5);

/// Timer passes every [`TICK`] on `clock`'s time (the routines' clock: the
/// system's, or with `--test-clock` the one tests set, where a pass also runs
/// whenever the clock is set).
pub(crate) async fn run(store: Store, clock: Arc<Clock>) {
    loop {
        tokio::time::sleep(TICK).await;
        if let Err(err) = tick(&store, clock.now()).await {
            tracing::warn!(error = %err, "timer tick failed");
        }
        if let Err(err) = crate::monitors::tick(&store, clock.now()).await {
            tracing::warn!(error = %err, "issue monitor tick failed");
        }
        if let Err(err) =
            paperclip_store::money::budget_changes::rollover(&store, chrono::Utc::now()).await
        {
            tracing::warn!(error = %err, "budget month rollover failed");
        }
    }
}

/// One pass: wakes every agent whose timer is due. The wake's idempotency key
/// names the interval slot, so two servers on one database wake an agent once.
pub async fn tick(store: &Store, now: chrono::DateTime<chrono::Utc>) -> anyhow::Result<usize> {
    let due = paperclip_store::runs::timer_candidates(store).await?;
    let mut woken = 0;
    for candidate in due {
        let policy = HeartbeatPolicy::from_runtime_config(&candidate.runtime_config);
        let status = candidate.status;
        if !policy.enabled
            || !matches!(
                status,
                AgentStatus::Idle | AgentStatus::Active | AgentStatus::Error
            )
        {
            continue;
        }
        let last = candidate
            .last_heartbeat_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        let interval = policy.interval_sec as i64;
        let elapsed_ok = last.is_none_or(|last| (now - last).num_seconds() >= interval);
        let cooled = candidate
            .last_finished_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_none_or(|t| {
                (now - t.with_timezone(&chrono::Utc)).num_seconds() >= policy.cooldown_sec as i64
            });
        if !elapsed_ok || !cooled {
            continue;
        }
        let slot = now.timestamp() / interval.max(1);
        wakes::enqueue(
            store,
            &Actor::system(),
            Wake {
                agent_id: candidate.agent_id.clone(),
                source: WakeSource::Timer,
                trigger_detail: Some("system".into()),
                reason: Some("heartbeat_timer".into()),
                payload: None,
                issue_id: None,
                idempotency_key: Some(format!("timer:{slot}")),
            },
        )
        .await?;
        woken += 1;
    }
    Ok(woken)
}
