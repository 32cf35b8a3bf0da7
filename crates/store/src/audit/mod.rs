//! The activity log every mutation writes in its own transaction, and the
//! revisions of agent configs.

pub mod activity;
pub(crate) mod mutate;
pub mod revisions;
