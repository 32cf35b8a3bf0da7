//! This crate's integration tests, in one binary: each file is a module.

mod common;

mod briefs;
mod claim_limit;
mod comments_by_ids;
mod issue_counts;
mod list_json;
mod month_boundary;
mod search_paths;
mod strict_values;
mod takeover;
mod tidy;
