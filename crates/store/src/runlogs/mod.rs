//! Run logs kept in the database (Postgres, several instances): chunks of a
//! run's output at their byte offsets, and where a log cut for its size
//! was cut. The runtime's log store decides what to write; this is its SQL.

pub mod chunks;

pub use chunks::*;
