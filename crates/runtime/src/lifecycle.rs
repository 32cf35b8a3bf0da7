//! The process's life, owned by `main`: one token that says "stop" and one
//! tracker of every task that must end before the store closes.
//!
//! `main` makes a [`Lifecycle`], hands clones to [`crate::Runtime::start`]
//! (which spawns its loops and every run on the tracker) and to the server
//! (whose accept loop and live streams end on the token), and on SIGTERM or
//! Ctrl-C calls [`Lifecycle::shutdown`], then [`Lifecycle::wait`]s a bounded
//! time before closing the store.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tokio_util::task::TaskTracker;

#[derive(Clone, Default)]
pub struct Lifecycle {
    stop: CancellationToken,
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
