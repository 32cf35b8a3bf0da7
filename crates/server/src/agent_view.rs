//! Agents as upstream answers them: the row with its reporting chain's
//! health (`orgChainHealth`), and on the agent's own read (`GET
//! /agents/{id}`, `/agents/me`) its chain of command. The chain is one
//! recursive query for a single agent and read from the list itself for a
//! company's agents. The own read also carries the agent's `access`, derived
//! from the row (no query: see `paperclip_core::agent_access`).

use std::collections::HashMap;

use paperclip_core::agent_access::{self, AgentAccess};
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::model::Agent;
use paperclip_core::org_chain::{self, Member, OrgChainHealth, Superior};
use paperclip_store::org::agent_chain;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::ApiResult;
use crate::AppState;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    #[serde(flatten)]
    agent: Agent,
    /// Upstream's execution environment: we run every agent in the one
    /// environment of its adapter, so there is no default to name.
    default_environment_id: Option<String>,
    org_chain_health: OrgChainHealth,
    /// The managers above, nearest first (only on the agent's own read).
    #[serde(skip_serializing_if = "Option::is_none")]
    chain_of_command: Option<Vec<Superior>>,
    /// Its membership and grants (only on the agent's own read, as upstream).
    #[serde(skip_serializing_if = "Option::is_none")]
    access: Option<AgentAccess>,
}

async fn build(app: &AppState, agent: Agent, with_superiors: bool) -> ApiResult<AgentView> {
    let above: HashMap<String, Member> = agent_chain::above(&app.store, &agent)
        .await?
        .into_iter()
        .map(|m| (m.id.clone(), m))
        .collect();
    let lookup = |id: &str| above.get(id).cloned();
    let health = org_chain::health(&agent_chain::member(&agent), lookup);
    let chain_of_command = with_superiors.then(|| org_chain::superiors(&health, lookup));
    let access = with_superiors.then(|| agent_access::of(&agent));
    Ok(AgentView {
        agent: with_defaults(agent),
        default_environment_id: None,
        org_chain_health: health,
        chain_of_command,
        access,
    })
}

/// One agent with its chain's health.
pub async fn one(app: &AppState, agent: Agent) -> ApiResult<AgentView> {
    build(app, agent, false).await
}

/// One agent with its chain's health and chain of command.
pub async fn detail(app: &AppState, agent: Agent) -> ApiResult<AgentView> {
    build(app, agent, true).await
}

/// A company's agents, each with its chain's health, from the list alone.
pub fn many(agents: Vec<Agent>) -> Vec<AgentView> {
    let members: HashMap<String, Member> = agents
        .iter()
        .map(|a| (a.id.clone(), agent_chain::member(a)))
        .collect();
    agents
        .into_iter()
        .map(|agent| {
            let health = org_chain::health(&members[&agent.id], |id| members.get(id).cloned());
            AgentView {
                agent: with_defaults(agent),
                default_environment_id: None,
                org_chain_health: health,
                chain_of_command: None,
                access: None,
            }
        })
        .collect()
}

/// The agent with the permissions and heartbeat limit in force written out,
/// as upstream answers them: a key the agent never set reads as the value
/// we apply (a permission not granted is false; the run limit is the
/// heartbeat policy's).
pub fn with_defaults(mut agent: Agent) -> Agent {
    let limit = HeartbeatPolicy::from_runtime_config(&agent.runtime_config).max_concurrent_runs;
    let permissions = object(&mut agent.permissions);
    for key in ["canCreateAgents", "canCreateSkills"] {
        permissions.entry(key).or_insert(Value::Bool(false));
    }
    let runtime = object(&mut agent.runtime_config);
    let heartbeat = runtime
        .entry("heartbeat")
        .or_insert_with(|| Value::Object(Map::new()));
    object(heartbeat)
        .entry("maxConcurrentRuns")
        .or_insert(Value::from(limit));
    agent
}

/// `v` as an object, a non-object (null: never set) replaced by `{}`.
fn object(v: &mut Value) -> &mut Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut().expect("an object")
}
