//! Issue-thread interactions: the cards an agent puts in a task's thread
//! when it needs a person. Creating one, listing them, and what a person's
//! comment or a closed task does to the pending ones; resolving one is in
//! [`crate::thread::interactions::resolve`]. Each change is one transaction with its
//! activity row and the wake it causes.

pub(crate) mod cards;
pub(crate) mod effects;
pub(crate) mod resolve;

pub use crate::thread::interactions::resolve::{resolve, Resolve};
pub use cards::*;
