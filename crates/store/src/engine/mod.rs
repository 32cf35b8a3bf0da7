//! The floor every other module stands on: connections and the SQLite writer,
//! the `$n` SQL both engines accept, row decoding, migrations and errors.
//! Nothing here knows a table of the domain.

pub(crate) mod args;
pub mod db;
pub(crate) mod error;
pub(crate) mod migrate;
pub(crate) mod pg_params;
pub(crate) mod raw;
pub mod raw_conn;
pub(crate) mod row;
pub(crate) mod sql;
pub mod writer;
