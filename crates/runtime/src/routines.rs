//! The routine scheduler: the one owner of schedule ticks. Every interval
//! (and once at start, which is how ticks missed while the server was down
//! are caught up) it dispatches the enabled schedules of active routines
//! whose next tick has come, as each routine's catch-up policy says. Two
//! servers on one database may both scan; the store's compare-and-set on
//! the tick makes only one of them dispatch it.
//!
//! Time comes from a [`Clock`]: the system's, or, only when the server was
//! started with `--test-clock`, a time tests set and advance through a
//! local-only route. So a cron routine is seen to fire without waiting for
//! wall-clock minutes or sleeping in tests.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::cron::{catch_up, parse_timezone, Cron};
use paperclip_store::routines::runs as routine_runs;
use paperclip_store::Store;

/// How often due schedules are looked for unless configured.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// The time routines run on.
#[derive(Debug)]
pub struct Clock {
    test: AtomicBool,
    /// Milliseconds since the epoch, when `test`.
    fixed_ms: AtomicI64,
    interval_ms: AtomicU64,
}

impl Default for Clock {
    fn default() -> Clock {
        Clock {
            test: AtomicBool::new(false),
            fixed_ms: AtomicI64::new(0),
            interval_ms: AtomicU64::new(DEFAULT_INTERVAL.as_millis() as u64),
        }
    }
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        if self.test.load(Ordering::SeqCst) {
            DateTime::from_timestamp_millis(self.fixed_ms.load(Ordering::SeqCst))
                .unwrap_or_else(Utc::now)
        } else {
            Utc::now()
        }
    }

    /// Makes this a test clock standing at `start`. Only the binary's
    /// `--test-clock` flag calls this (and refuses it in authenticated mode).
    pub fn enable_test(&self, start: DateTime<Utc>) {
        self.fixed_ms
            .store(start.timestamp_millis(), Ordering::SeqCst);
        self.test.store(true, Ordering::SeqCst);
    }

    pub fn is_test(&self) -> bool {
        self.test.load(Ordering::SeqCst)
    }

    /// Sets a test clock; a system clock cannot be set (`false`).
    pub fn set(&self, at: DateTime<Utc>) -> bool {
        if !self.is_test() {
            return false;
        }
        self.fixed_ms.store(at.timestamp_millis(), Ordering::SeqCst);
        true
    }

    pub fn set_interval(&self, interval: Duration) {
        self.interval_ms
            .store(interval.as_millis().max(1) as u64, Ordering::SeqCst);
    }

    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms.load(Ordering::SeqCst))
    }
}

/// Who scheduled runs are attributed to in the activity log.
pub fn scheduler_actor() -> Actor {
    Actor {
        kind: ActorKind::System,
        id: "routine-scheduler".into(),
        run_id: None,
        company_id: None,
    }
}

pub(crate) async fn run(store: Store, clock: std::sync::Arc<Clock>) {
    loop {
        if let Err(err) = tick(&store, &clock).await {
            tracing::warn!(error = %err, "routine tick failed");
        }
        tokio::time::sleep(clock.interval()).await;
    }
}

/// One pass; the number of runs dispatched.
pub async fn tick(store: &Store, clock: &Clock) -> anyhow::Result<usize> {
    let now = clock.now();
    let actor = scheduler_actor();
    let mut dispatched = 0;
    for due in routine_runs::due(store, now).await? {
        let t = &due.trigger;
        let (Some(expr), Some(zone), Some(at)) = (
            t.cron_expression.as_deref(),
            t.timezone.as_deref(),
            t.next_run_at.as_deref(),
        ) else {
            continue;
        };
        let (Ok(cron), Ok(tz), Ok(at)) = (
            Cron::parse(expr),
            parse_timezone(zone),
            DateTime::parse_from_rfc3339(at),
        ) else {
            tracing::warn!(trigger = %t.id, "schedule cannot be read; skipped");
            continue;
        };
        let plan = catch_up(&cron, tz, at.with_timezone(&Utc), now, due.catch_up_policy);
        match routine_runs::fire(store, &actor, t, &plan.ticks, plan.next, now).await {
            Ok(Some(runs)) => dispatched += runs.len(),
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(trigger = %t.id, error = %err, "routine dispatch failed");
                let tick = plan.ticks.last().copied().unwrap_or(now);
                routine_runs::fire_failed(store, t, tick, plan.next, now, &err.to_string()).await?;
            }
        }
    }
    Ok(dispatched)
}
