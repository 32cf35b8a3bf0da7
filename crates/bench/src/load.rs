//! A closed-loop load generator: N clients, each sending its next request as
//! soon as the previous one has been answered, with per-request latencies.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub enum Stop {
    /// This many requests in total, shared out among the clients.
    Count(u64),
    /// As many requests as fit in this time.
    For(Duration),
}

pub struct Run {
    /// Latencies of the successful requests, sorted ascending.
    pub latencies: Vec<Duration>,
    pub elapsed: Duration,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl Run {
    /// Nearest-rank percentile, `p` in 0..=100.
    pub fn pct(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = (p / 100.0 * self.latencies.len() as f64).ceil() as usize;
        self.latencies[rank.clamp(1, self.latencies.len()) - 1]
    }

    pub fn per_sec(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// Says so on stderr when requests failed, so a broken run is not read as
    /// a fast one.
    pub fn warn_errors(&self, what: &str) {
        if self.errors > 0 {
            eprintln!(
                "warning: {what}: {} requests failed; first: {}",
                self.errors,
                self.first_error.as_deref().unwrap_or("?")
            );
        }
    }
}

/// Runs `op(i)` from `clients` concurrent tasks until `stop`; `i` numbers the
/// requests from 0 so callers can make each body distinct.
pub async fn run<F, Fut>(clients: usize, stop: Stop, op: F) -> Run
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let op = Arc::new(op);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let (limit, deadline) = match stop {
        Stop::Count(n) => (n, None),
        Stop::For(d) => (u64::MAX, Some(started + d)),
    };
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (op, next) = (op.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let (mut errors, mut first_error) = (0u64, None);
                loop {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= limit {
                        break;
                    }
                    let sent = Instant::now();
                    match op(i).await {
                        Ok(()) => latencies.push(sent.elapsed()),
                        Err(e) => {
                            errors += 1;
                            first_error.get_or_insert_with(|| format!("{e:#}"));
                        }
                    }
                }
                (latencies, errors, first_error)
            })
        })
        .collect();
    let mut run = Run {
        latencies: Vec::new(),
        elapsed: Duration::ZERO,
        errors: 0,
        first_error: None,
    };
    for result in futures::future::join_all(tasks).await {
        let (latencies, errors, first_error) = result.expect("load task panicked");
        run.latencies.extend(latencies);
        run.errors += errors;
        run.first_error = run.first_error.or(first_error);
    }
    run.elapsed = started.elapsed();
    run.latencies.sort_unstable();
    run
}
