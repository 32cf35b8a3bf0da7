//! The sidebar's count of open failures, kept between pages. Every board
//! page shows it, and finding it means the inbox's whole scan (the newest
//! failures, their dismissals, the later successes of their tasks): 6–9 ms
//! of each page at a million tasks, whatever the page.
//!
//! A count is kept until a committed change could move it — a run's
//! activity (it finished, failed, was recovered), an inbox dismissal or
//! restore, a task or agent deleted — or for [`FRESH_FOR`] at most, which bounds
//! what no commit of this process announces: another server on the same
//! Postgres, a snooze running out, a failure leaving the 14-day window.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use paperclip_core::activity::{Action, EntityType};

use crate::{Result, Store, StoreEvent};

/// Longest a kept count is shown without being found again.
pub const FRESH_FOR: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Badges {
    /// Moves on every commit that could change a count.
    generation: AtomicU64,
    kept: Mutex<HashMap<(String, String), Kept>>,
}

struct Kept {
    generation: u64,
    at: Instant,
    count: usize,
}

impl Badges {
    /// Called with a transaction's events once it has committed: after the
    /// commit, so a count found from before it is never kept as current.
    pub(crate) fn committed(&self, events: &[StoreEvent]) {
        if events.iter().any(moves_counts) {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn moves_counts(event: &StoreEvent) -> bool {
    let StoreEvent::Activity(entry) = event else {
        return false;
    };
    entry.entity_type == EntityType::HeartbeatRun.as_str()
        || entry.action == Action::InboxDismissed.as_str()
        || entry.action == Action::InboxRestored.as_str()
        || entry.action == Action::IssueDeleted.as_str()
        || entry.action == Action::AgentDeleted.as_str()
}

/// How many failure items `user_id`'s inbox shows for the company: what
/// `failed_runs(.., false).len()` answers, kept as said above.
pub async fn open_failures(store: &Store, company_id: &str, user_id: &str) -> Result<usize> {
    let badges = store.badges();
    let key = (company_id.to_string(), user_id.to_string());
    // Read before the scan: a commit landing during it moves the generation
    // past this one, so what the scan found is not kept as current.
    let generation = badges.generation.load(Ordering::SeqCst);
    {
        let kept = badges.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = kept.get(&key) {
            if k.generation == generation && k.at.elapsed() < FRESH_FOR {
                return Ok(k.count);
            }
        }
    }
    let count = crate::views::inbox::failed_runs(store, company_id, user_id, false)
        .await?
        .len();
    let mut kept = badges.kept.lock().unwrap_or_else(|e| e.into_inner());
    // Companies come and go rarely; a bound keeps a long-lived process from
    // holding one entry per company it ever showed.
    if kept.len() >= 1024 {
        kept.clear();
    }
    kept.insert(
        key,
        Kept {
            generation,
            at: Instant::now(),
            count,
        },
    );
    Ok(count)
}
