//! The wait of asynchronous runs for their callback: recorded with a
//! deadline when the adapter hands the run off, and enforced by the executor
//! loop, which times out a run whose callback is overdue (its task then
//! follows, see `paperclip_store::runs::follow_up`).

use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use std::time::Duration;

use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs::{self, Finish};
use paperclip_store::Store;

use crate::Runtime;

/// The wait when an adapter names none.
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(3600);

pub(crate) async fn awaiting(
    store: &Store,
    run: &HeartbeatRun,
    wait: Duration,
) -> anyhow::Result<()> {
    let deadline = chrono::Utc::now() + chrono::Duration::from_std(wait)?;
    let deadline = deadline.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    paperclip_store::runs::callbacks::await_callback(store, run, &deadline).await?;
    Ok(())
}

impl Runtime {
    /// Times out every run whose callback deadline has passed.
    pub(crate) async fn expire_callbacks(&self) -> anyhow::Result<()> {
        let store = &self.inner.store;
        for run in paperclip_store::runs::callbacks::overdue(store).await? {
            let finish = Finish {
                status: RunStatus::TimedOut,
                error: Some(
                    "The agent accepted the run but never called back before the deadline \
                     (adapterConfig.callbackTimeoutSec)"
                        .into(),
                ),
                error_code: Some(RunErrorCode::CallbackTimeout.as_str().into()),
                ..Finish::new(RunStatus::Failed)
            };
            if let Some(done) = runs::finish(store, &run.id, finish).await? {
                tracing::warn!(run = %done.id, agent = %done.agent_id, "async run timed out waiting for its callback");
                self.publish_run(&done, "heartbeat.run.finished");
                self.publish_agent(&done.agent_id).await;
                self.kick();
            }
        }
        Ok(())
    }
}
