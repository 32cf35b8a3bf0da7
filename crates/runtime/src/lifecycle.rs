//! The process's life, owned by `main`: one token that says "stop" and one
//! tracker of every task that must end before the store closes.
//!
//! `main` makes a [`Lifecycle`], hands clones to [`crate::Runtime::start`]
//! (which spawns its loops and every run on the tracker) and to the server
//! (whose accept loop and live streams end on the token), and on SIGTERM or
//! Ctrl-C calls [`Lifecycle::shutdown`], then [`Lifecycle::wait`]s a bounded
//! time before closing the store.
//!
//! With `--drain-seconds`, SIGTERM first calls [`Lifecycle::drain`]: the
//! instance keeps serving but says it is not ready (so a load balancer stops
//! sending it new requests) and claims no new run (so the other instances
//! take the queue), then shuts down.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

#[derive(Clone, Default)]
pub struct Lifecycle {
    stop: CancellationToken,
    drain: CancellationToken,
    tasks: TaskTracker,
}

impl Lifecycle {
    pub fn new() -> Lifecycle {
        Lifecycle::default()
    }

    /// Asks everything on this lifecycle to stop. Idempotent.
    pub fn shutdown(&self) {
        self.stop.cancel();
        self.tasks.close();
    }

    /// Marks the instance draining: it still serves requests and drives
    /// the runs it has, but answers not ready and claims nothing new.
    /// Idempotent; [`Lifecycle::shutdown`] follows.
    pub fn drain(&self) {
        self.drain.cancel();
    }

    /// Whether the instance is draining or stopping: not ready for new
    /// work. A stopping instance drains too, so readers need ask only this.
    pub fn is_draining(&self) -> bool {
        self.drain.is_cancelled() || self.stop.is_cancelled()
    }

    /// Whether shutdown has been asked for.
    pub fn is_stopping(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Resolves once shutdown has been asked for.
    pub fn stopping(&self) -> WaitForCancellationFutureOwned {
        self.stop.clone().cancelled_owned()
    }

    /// The token itself, for a `select!` or a child token.
    pub fn token(&self) -> &CancellationToken {
        &self.stop
    }

    /// Spawns `task` on the tracker: [`Lifecycle::wait`] waits for it.
    pub fn spawn<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(task)
    }

    /// Spawns `task` on the tracker, dropped (not awaited) at shutdown: a
    /// loop that has nothing to finish.
    pub fn spawn_until_stopped<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = self.stop.clone();
        self.tasks.spawn(async move {
            let _ = stop.run_until_cancelled(task).await;
        });
    }

    /// After [`Lifecycle::shutdown`]: waits until every tracked task has
    /// ended, or `bound` has passed; `true` if they all ended.
    pub async fn wait(&self, bound: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(bound, self.tasks.wait()).await.is_ok()
    }

    /// How many tracked tasks are still running.
    pub fn tasks_left(&self) -> usize {
        self.tasks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draining_keeps_running_and_stopping_implies_draining() {
        let l = Lifecycle::new();
        assert!(!l.is_draining() && !l.is_stopping());
        l.drain();
        assert!(l.is_draining() && !l.is_stopping());
        let other = Lifecycle::new();
        other.shutdown();
        assert!(other.is_draining() && other.is_stopping());
    }
}
