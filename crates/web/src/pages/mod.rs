//! One module per page. Each handler loads what it shows with a fixed number
//! of queries (no per-row lookups) and renders it inside the layout.

pub mod account;
pub mod activity;
pub mod agent;
pub(crate) mod agent_instructions;
pub mod agents;
pub mod approval;
pub mod approvals;
pub mod artifacts;
pub(crate) mod board;
pub(crate) mod board_parts;
pub mod cards;
pub mod chat;
pub mod chief;
mod comment_view;
pub mod company_port;
pub mod costs;
mod costs_local;
pub mod dashboard;
pub mod goal;
pub mod hire;
mod hire_fields;
mod hire_local;
pub mod inbox;
pub(crate) mod inbox_decisions;
pub(crate) mod inbox_mine;
pub mod links;
pub mod members;
pub mod misc;
pub mod org;
pub mod project;
pub mod routine;
pub mod routines;
pub mod run;
pub mod runs;
pub mod secrets;
pub mod settings;
pub mod skills;
pub mod task;
pub mod task_changes;
pub mod task_context;
pub mod task_control;
pub mod task_files;
pub mod task_props;
pub mod tasks;
pub mod thread;
pub mod thread_ids;
pub mod thread_notices;
pub mod thread_steps;
pub mod thread_words;
pub mod workspace_steps;

use std::collections::HashMap;

use paperclip_core::model::Agent;

/// Agents by id, for naming assignees and actors without a query each.
pub(crate) fn by_id(agents: &[Agent]) -> HashMap<&str, &Agent> {
    agents.iter().map(|a| (a.id.as_str(), a)).collect()
}
