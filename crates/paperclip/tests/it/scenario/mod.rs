//! The upstream scenario's shape comparison and its list of known differences.

pub mod exceptions;
pub mod shape;
