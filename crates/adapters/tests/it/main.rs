//! This crate's integration tests, in one binary: each file is a module.

mod common;
#[path = "../../../paperclip/tests/it/k8s/fake/mod.rs"]
#[allow(dead_code)]
mod fake;

mod cli_usage;
mod deploy;
mod http;
mod k8s_faults;
mod process;
