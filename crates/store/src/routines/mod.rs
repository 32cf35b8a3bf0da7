//! Routines: create, read, update with the checks each field needs. Every
//! change writes a revision in the same transaction
//! ([`crate::routines::revisions`]).

pub(crate) mod checks;
pub mod description;
pub mod folders;
pub(crate) mod gate;
pub mod revisions;
pub(crate) mod routine;
pub mod run_list;
pub mod runs;
pub(crate) mod table;
pub(crate) mod trigger_table;
pub mod triggers;

pub use routine::*;
pub use table::*;
