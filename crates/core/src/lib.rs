//! Domain types and pure rules of the Paperclip control plane.
//!
//! This crate owns the vocabulary (statuses, roles, levels), the state machines
//! (issue transitions, agent status) and the naming rules (issue prefixes, url keys).
//! It performs no I/O: every function here is deterministic, so the rules are
//! unit-tested next to their definitions and shared by the store and the server.

pub mod activity;
pub mod actor;
pub mod agent;
pub mod agent_access;
pub mod approval;
pub mod asset;
pub mod attachment;
pub mod backup;
pub mod billing;
pub mod budget;
pub mod chat;
pub mod codebase;
pub mod comment;
pub mod company;
pub mod company_governance;
pub mod company_secret;
pub mod context;
pub mod cron;
pub mod decision;
pub mod folder;
pub mod goal;
pub mod heartbeat;
pub mod input;
pub mod interaction;
pub mod interaction_payload;
pub mod issue;
pub mod issue_attention;
pub mod limits;
pub mod model;
pub mod model_server;
pub mod monitor;
pub mod naming;
pub mod org;
pub mod org_chain;
pub mod package;
pub mod project;
pub mod push;
pub mod routine;
pub mod routine_dispatch;
pub mod routine_vars;
pub mod run_liveness;
pub mod run_shape;
pub mod run_status;
pub mod secret_box;
pub mod secret_proposal;
pub mod secrets;
pub mod skill;
pub mod stored;
pub mod task_tree;
pub mod team;
pub mod template;
pub mod thrift;
pub mod tool_grammar;
pub mod tree_control;
pub mod words;
pub mod work_product;
pub mod workspace;
pub mod workspace_ops;
