//! The paperclip crate's integration tests, in one binary (as ripgrep does):
//! each file is a module, built and linked once instead of once per file.

mod common;
#[path = "coding_agents/clis.rs"]
mod clis;
#[path = "k8s/fake/mod.rs"]
mod fake;
#[path = "k8s/setup.rs"]
mod setup;
mod scenario;

mod activity;
mod agent_auth;
mod agent_config_form;
mod agent_environment;
mod async_runs;
mod attachment_access;
mod attachments;
mod browser;
mod budgets;
mod chaos;
mod cli;
mod cli_work;
mod coding_agents;
mod comment_retries;
mod company_secrets;
mod compat_routes;
mod compat_shapes;
mod contract;
mod dashboard_counters;
mod detail_pages;
mod find_pages;
mod first_run;
mod follow_up;
mod governance;
mod group_commit;
mod heartbeats;
mod hire_and_settings;
mod inbox;
mod input_bounds;
mod interaction_rules;
mod interactions;
mod interactions_agent;
mod isolation;
mod issues;
mod k8s_authenticated;
mod k8s_jobs;
mod live_events;
mod local_trust;
mod org;
mod recovery;
mod routine_pages;
mod routine_rules;
mod routines;
mod routines_cli;
mod routines_webhook;
mod run_budget;
mod run_isolation;
mod run_lifetime;
mod run_liveness;
mod run_logs;
mod run_owner;
mod scale_smoke;
mod search;
mod secrets;
mod task_editing;
mod team_access;
mod teams;
mod thrift;
mod upgrade;
mod upstream_cli;
mod upstream_cli_interactions;
mod upstream_cli_tree;
mod upstream_scenario;
mod wakes_exactly_once;
mod web_pages;
mod work_products;
