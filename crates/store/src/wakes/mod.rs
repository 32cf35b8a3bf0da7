//! The wakeup coordinator's queue: the one entry point for every wake.
//!
//! A wake is recorded as an `agent_wakeup_requests` row and, unless it is
//! skipped or folded into the run already waiting for the same agent and
//! task (`wake_queue`), a `queued` run. The row says which: `skipped` with
//! its `skip_reason`, or `queued`/`coalesced` with the `run_id` serving it. All
//! of it happens inside the caller's transaction, so the change that caused
//! a wake (an assignment, a comment) and the wake itself commit together.

pub mod compact;
pub(crate) mod enqueue;
pub mod idle;
pub mod loops;
pub(crate) mod queue;

pub use enqueue::*;
pub use queue::{Wake, Woken};
