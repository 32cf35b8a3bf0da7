//! The health of an agent's reporting chain (upstream's `orgChainHealth`):
//! the agent and every manager above it, whether a manager is terminated or
//! missing (or the chain loops), and whether escalations would land on a
//! paused manager. Pure: the caller supplies the agents it knows.

use serde::{Serialize, Serializer};
use utoipa::ToSchema;

use crate::agent::{AgentRole, AgentStatus};

/// Longest chain followed: a company's org is far shallower, and a loop
/// written before cycle checks existed must not hang the walk.
pub const MAX_DEPTH: usize = 50;

/// What the rule needs of an agent.
#[derive(Debug, Clone)]
pub struct Member {
    pub id: String,
    pub company_id: String,
    pub name: String,
    pub role: AgentRole,
    pub title: Option<String>,
    pub status: AgentStatus,
    pub reports_to: Option<String>,
}

/// A link's standing: the agent's own status, or why the chain broke there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    Agent(AgentStatus),
    /// The manager named by `reportsTo` does not exist (in this company).
    Missing,
    /// The chain comes back to an agent already on it.
    Cycle,
}

impl Serialize for LinkStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match self {
            LinkStatus::Agent(status) => status.as_str(),
            LinkStatus::Missing => "missing",
            LinkStatus::Cycle => "cycle",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    #[serde(rename = "self")]
    Itself,
    Ancestor,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChainEntry {
    pub id: String,
    pub company_id: String,
    pub name: String,
    /// The agent's status, or `missing` / `cycle` where the chain breaks.
    #[schema(value_type = String)]
    pub status: LinkStatus,
    pub reports_to: Option<String>,
    pub depth: usize,
    pub relation: Relation,
}

/// A manager that breaks or weakens the chain.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AncestorRef {
    pub id: String,
    pub name: String,
    #[schema(value_type = String)]
    pub status: LinkStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainState {
    Healthy,
    InvalidOrgChain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChainReason {
    Healthy,
    TerminatedAncestor,
    MissingManager,
    Cycle,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrgChainHealth {
    pub status: ChainState,
    pub reason: ChainReason,
    /// The agent (depth 0), then each manager up to the top.
    pub full_chain: Vec<ChainEntry>,
    pub first_invalid_ancestor: Option<AncestorRef>,
    pub invalid_ancestors: Vec<AncestorRef>,
    /// What to do about an invalid chain, in words.
    pub repair_guidance: Option<String>,
    pub paused_ancestors: Vec<AncestorRef>,
    /// Set when the agent can work but its escalations reach a paused manager.
    pub escalation_warning: Option<String>,
}

/// One manager above an agent (upstream's `chainOfCommand` entry).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Superior {
    pub id: String,
    pub name: String,
    pub role: AgentRole,
    pub title: Option<String>,
}

/// Walks from `agent` up its managers, found through `lookup`.
pub fn health(agent: &Member, lookup: impl Fn(&str) -> Option<Member>) -> OrgChainHealth {
    let entry = |m: &Member, depth, relation| ChainEntry {
        id: m.id.clone(),
        company_id: m.company_id.clone(),
        name: m.name.clone(),
        status: LinkStatus::Agent(m.status),
        reports_to: m.reports_to.clone(),
        depth,
        relation,
    };
    let mut chain = vec![entry(agent, 0, Relation::Itself)];
    let mut invalid = Vec::new();
    let mut paused = Vec::new();
    let mut seen = vec![agent.id.clone()];
    let mut next = agent.reports_to.clone();
    while let Some(manager_id) = next.take() {
        let depth = chain.len();
        let broken = |name: String, status: LinkStatus, reports_to: Option<String>| ChainEntry {
            id: manager_id.clone(),
            company_id: agent.company_id.clone(),
            name,
            status,
            reports_to,
            depth,
            relation: Relation::Ancestor,
        };
        let found = lookup(&manager_id).filter(|m| m.company_id == agent.company_id);
        if seen.contains(&manager_id) || depth > MAX_DEPTH {
            let (name, reports_to) = found
                .map(|m| (m.name, m.reports_to))
                .unwrap_or_else(|| (manager_id.clone(), None));
            chain.push(broken(name.clone(), LinkStatus::Cycle, reports_to));
            invalid.push(AncestorRef {
                id: manager_id.clone(),
                name,
                status: LinkStatus::Cycle,
            });
            break;
        }
        let Some(manager) = found else {
            chain.push(broken(manager_id.clone(), LinkStatus::Missing, None));
            invalid.push(AncestorRef {
                id: manager_id.clone(),
                name: manager_id.clone(),
                status: LinkStatus::Missing,
            });
            break;
        };
        chain.push(entry(&manager, depth, Relation::Ancestor));
        let as_ref = || AncestorRef {
            id: manager.id.clone(),
            name: manager.name.clone(),
            status: LinkStatus::Agent(manager.status),
        };
        match manager.status {
            AgentStatus::Terminated => invalid.push(as_ref()),
            AgentStatus::Paused => paused.push(as_ref()),
            _ => {}
        }
        seen.push(manager_id);
        next = manager.reports_to.clone();
    }
    let first = invalid.first().cloned();
    let reason = match first.as_ref().map(|a| a.status) {
        None => ChainReason::Healthy,
        Some(LinkStatus::Missing) => ChainReason::MissingManager,
        Some(LinkStatus::Cycle) => ChainReason::Cycle,
        Some(LinkStatus::Agent(_)) => ChainReason::TerminatedAncestor,
    };
    let repair_guidance = first.as_ref().map(|a| guidance(agent, a, reason));
    let can_work = matches!(
        agent.status,
        AgentStatus::Active | AgentStatus::Idle | AgentStatus::Running | AgentStatus::Error
    );
    let escalation_warning = paused.first().filter(|_| can_work).map(|p| {
        format!(
            "{} escalates to {}, who is paused: nothing sent up will be acted on until {} is \
             resumed or {} reports to someone else.",
            agent.name, p.name, p.name, agent.name
        )
    });
    OrgChainHealth {
        status: if first.is_some() {
            ChainState::InvalidOrgChain
        } else {
            ChainState::Healthy
        },
        reason,
        full_chain: chain,
        first_invalid_ancestor: first,
        invalid_ancestors: invalid,
        repair_guidance,
        paused_ancestors: paused,
        escalation_warning,
    }
}

fn guidance(agent: &Member, at: &AncestorRef, reason: ChainReason) -> String {
    let fix = "Give it (or the first affected manager above it) an active manager, or make it a \
               top-level agent; or pause the agents below the break.";
    match reason {
        ChainReason::MissingManager => format!(
            "{}'s chain points at a manager that does not exist ({}). {fix}",
            agent.name, at.id
        ),
        ChainReason::Cycle => format!("{}'s chain loops back at {}. {fix}", agent.name, at.name),
        _ => format!(
            "{}'s chain passes through {}, who is terminated. {fix}",
            agent.name, at.name
        ),
    }
}

/// The managers above the agent, nearest first, as far as the chain is whole.
pub fn superiors(
    health: &OrgChainHealth,
    lookup: impl Fn(&str) -> Option<Member>,
) -> Vec<Superior> {
    health
        .full_chain
        .iter()
        .filter(|e| e.relation == Relation::Ancestor && matches!(e.status, LinkStatus::Agent(_)))
        .filter_map(|e| lookup(&e.id))
        .map(|m| Superior {
            id: m.id,
            name: m.name,
            role: m.role,
            title: m.title,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn member(id: &str, status: AgentStatus, reports_to: Option<&str>) -> Member {
        Member {
            id: id.into(),
            company_id: "c".into(),
            name: id.to_uppercase(),
            role: AgentRole::General,
            title: None,
            status,
            reports_to: reports_to.map(str::to_string),
        }
    }

    fn run(agents: &[Member], id: &str) -> OrgChainHealth {
        let by_id: HashMap<String, Member> =
            agents.iter().map(|m| (m.id.clone(), m.clone())).collect();
        health(&by_id[id], |m| by_id.get(m).cloned())
    }

    #[test]
    fn a_whole_chain_is_healthy_and_lists_every_manager() {
        let org = [
            member("ceo", AgentStatus::Idle, None),
            member("cto", AgentStatus::Idle, Some("ceo")),
            member("eng", AgentStatus::Running, Some("cto")),
        ];
        let h = run(&org, "eng");
        assert_eq!(h.status, ChainState::Healthy);
        let ids: Vec<&str> = h.full_chain.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["eng", "cto", "ceo"]);
        assert_eq!(h.full_chain[2].depth, 2);
        assert!(h.repair_guidance.is_none() && h.escalation_warning.is_none());
        let by_id: HashMap<String, Member> =
            org.iter().map(|m| (m.id.clone(), m.clone())).collect();
        let up = superiors(&h, |m| by_id.get(m).cloned());
        assert_eq!(
            up.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["cto", "ceo"]
        );
    }

    #[test]
    fn a_terminated_or_missing_manager_breaks_it() {
        let org = [
            member("ceo", AgentStatus::Terminated, None),
            member("cto", AgentStatus::Idle, Some("ceo")),
            member("eng", AgentStatus::Idle, Some("gone")),
        ];
        let h = run(&org, "cto");
        assert_eq!(h.reason, ChainReason::TerminatedAncestor);
        assert!(h.repair_guidance.as_deref().unwrap().contains("CEO"));
        let h = run(&org, "eng");
        assert_eq!(h.reason, ChainReason::MissingManager);
        assert_eq!(h.full_chain[1].status, LinkStatus::Missing);
    }

    #[test]
    fn a_loop_ends_the_walk_and_a_paused_manager_warns() {
        let org = [
            member("a", AgentStatus::Idle, Some("b")),
            member("b", AgentStatus::Paused, Some("a")),
        ];
        let h = run(&org, "a");
        assert_eq!(h.reason, ChainReason::Cycle);
        assert_eq!(h.full_chain.len(), 3);
        assert_eq!(h.paused_ancestors.len(), 1);
        assert!(h.escalation_warning.is_some());
        // A paused agent's own escalations are moot: no warning.
        let h = run(&org, "b");
        assert!(h.escalation_warning.is_none());
    }
}
