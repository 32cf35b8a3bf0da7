//! Heartbeat runs (`queued -> running -> succeeded | failed | cancelled |
//! timed_out`) and their append-only event timeline. Claiming a run is one
//! conditional UPDATE, so a queued run is started at most once.

pub mod budget;
pub mod callbacks;
pub mod context;
pub(crate) mod finish;
pub mod follow_up;
pub(crate) mod limit;
pub mod logs;
pub mod sessions;
pub(crate) mod settle;
pub(crate) mod table;
pub(crate) mod text;
pub(crate) mod verdict;
pub mod workspace_life;
pub mod workspace_ops;
pub mod workspaces;

pub use finish::*;
pub use sessions::SessionUpdate;
pub use table::*;
