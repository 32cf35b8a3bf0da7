//! Several control-plane instances on one database: who is alive (leases),
//! which runs a dead one left, loops that run on one instance at a time, and
//! the Postgres channel live events cross instances on.

pub mod bus;
pub mod instances;
pub mod singletons;

pub use instances::{Instance, LostRun};
