//! The upstream scenario's shape comparison and its list of known
//! differences, and the check of its bodies against our OpenAPI document.

pub mod exceptions;
pub mod shape;
pub mod spec_bodies;
