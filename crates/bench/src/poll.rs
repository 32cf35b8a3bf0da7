//! The one way the chaos driver and the test suite wait: on a condition,
//! with a deadline, polled every 50 ms; never a fixed sleep.

use std::time::{Duration, Instant};

/// How often a condition is checked again.
const PERIOD: Duration = Duration::from_millis(50);

/// Polls `probe` until it returns `Some`, or `None` after `secs`.
pub async fn until<T>(secs: u64, mut probe: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe().await {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(PERIOD).await;
    }
}

/// [`until`] for code that cannot await (a plain function, a thread of its
/// own): the same condition, deadline and period, the thread asleep between.
pub fn until_blocking<T>(secs: u64, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(PERIOD);
    }
}
