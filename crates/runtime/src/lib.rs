//! The heartbeat runtime: everything that happens between "wake this agent"
//! and "the run is recorded".
//!
//! - [`executor`] claims queued runs (respecting each agent's concurrency),
//!   invokes the agent's adapter with its context and credentials, streams
//!   output to the [`logs`] store and the live [`hub`], and records the outcome.
//! - `live` owns every run this process drives, from before its claim until
//!   its outcome is recorded; cancel, pause and budget stops go through it.
//! - `budget` stops a run whose streamed cost reaches a budget or its cap.
//! - [`next`] decides which queued runs to try to start (a pure rule).
//! - [`scheduler`] turns timer policies into wakes; [`routines`] owns
//!   routines' schedule ticks (on a [`routines::Clock`]).
//! - [`recovery`] settles what a previous process left behind.
//! - [`backups`] takes the automatic database backups and reports on them.
//! - [`lifecycle`] is the process's life (`main` owns it): the loops and
//!   the runs are spawned on its tracker and stop on its token.
//! - `log_retention` deletes the logs of runs older than their company's
//!   `runLogRetentionDays`, on the routines' clock.
//! - [`skills`] ships the Paperclip skill to the data dir for coding CLIs.
//! - [`tokens`] mints and checks the short-lived per-run credentials.
//! - [`vault`] holds the master key company secrets are sealed with;
//!   `secret_env` resolves an agent's secret references as its run starts.
//! - [`workspace`] drives git for execution workspaces (a worktree per task,
//!   serialized per repository, diffs, snapshots, close-readiness); it is
//!   not yet wired into runs (issue 36).
//!
//! Wakes themselves are enqueued by the store (`paperclip_store::wakes`)
//! inside the transaction that caused them; the runtime learns of them from
//! the store's commit events and, as a backstop, by polling.

mod agent_skills;
pub mod backups;
mod budget;
mod callbacks;
pub mod executor;
pub mod fleet;
pub mod hub;
pub mod interrupt;
pub mod lifecycle;
mod live;
mod log_retention;
pub mod logs;
pub mod monitors;
pub mod next;
mod notes;
mod outcome;
mod project_env;
pub mod prompt_preview;
pub mod recovery;
mod redact;
mod routine_env;
pub mod routines;
mod run;
pub mod scheduler;
mod secret_env;
mod sink;
pub mod skills;
pub mod tokens;
pub mod vault;
pub mod workspace;
pub mod workspace_life;

pub use executor::Runtime;
pub use lifecycle::Lifecycle;
pub use live::RunProcesses;
