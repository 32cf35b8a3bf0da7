//! The one way the chaos driver and the test suite wait: on a condition,
//! with a deadline, polled every 50 ms; never a fixed sleep.

use std::time::{Duration, Instant};

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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
