//! Issues (tasks): identifiers from an atomic per-company counter, the status
//! transition table, parent/child and blocker graphs, labels, and the atomic
//! checkout that gives one agent exclusive ownership of a task.

pub mod chat;
pub(crate) mod chat_rules;
pub(crate) mod create;
pub(crate) mod edit;
pub(crate) mod gate;
pub(crate) mod graph;
pub mod inbox_state;
pub mod labels;
pub(crate) mod list;
pub mod monitors;
pub(crate) mod ownership;
pub(crate) mod reopen;
pub(crate) mod table;
pub mod tree_holds;
pub(crate) mod tree_preview;
pub(crate) mod update_details;
pub(crate) mod wake;
pub mod watchdogs;

pub use crate::issues::create::create;
pub use crate::issues::list::filter::{Band, Direction, Filter, Page, Position, Sort, SortedPage};
pub use crate::issues::list::json::{list_json, JsonPage};
pub use crate::issues::list::query::{count, list, list_sorted};
pub use crate::issues::list::rollup::list_body;
pub use edit::*;
pub use reopen::NotWoken;
pub use table::*;
