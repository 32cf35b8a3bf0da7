//! Companies, people, members, keys, secrets, agents, goals and projects:
//! who works where, and with what access.

pub mod agent_chain;
pub mod agent_levers;
mod agent_names;
pub mod agents;
pub mod board_keys;
pub mod companies;
pub mod company_assets;
pub mod company_of;
pub(crate) mod company_settings;
pub mod goals;
pub mod keys;
pub mod members;
pub mod model_servers;
pub mod people;
pub mod projects;
pub mod secret_grants;
pub mod secret_proposals;
pub mod secrets;
pub mod skills;
pub mod skills_edit;
pub mod skills_sync;
mod workspace_rows;
pub mod workspaces;
