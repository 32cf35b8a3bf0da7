//! Routines: create, read, update with the checks each field needs. Every
//! change writes a revision in the same transaction
//! ([`crate::routines::revisions`]).

pub mod revisions;
pub mod runs;
pub mod triggers;
pub(crate) mod gate;
pub(crate) mod routine;
pub(crate) mod table;
pub(crate) mod trigger_table;

pub use routine::*;
pub use table::*;
