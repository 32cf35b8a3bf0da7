//! An agent's access as upstream answers it on the agent's own read
//! (`access`: its company membership, its grants and whether it may hand
//! tasks to others), derived from what this build enforces rather than from
//! rows of their own.
//!
//! Why derived: here an agent belongs to the company that hired it from hire
//! to deletion (no membership row to drift from the agent), a terminated or
//! unapproved agent cannot authenticate at all, and the one grant we enforce
//! for agents, `tasks:assign`, is the agent's `canAssignTasks` permission:
//! hired with it (as upstream grants it on every hire), lost only when the
//! board sets it to `false`. Serving rows we do not read when deciding would
//! tell an agent a right it does not have.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::agent::{AgentRole, AgentStatus};
use crate::model::Agent;

/// Why an agent may (or may not) assign tasks, upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskAssignSource {
    CeoRole,
    AgentCreator,
    ExplicitGrant,
    /// Upstream's: an active member without the grant. Never ours: every
    /// agent that may assign holds the grant (see the module comment).
    SimpleDefault,
    None,
}

/// Upstream's membership statuses that an agent can be in here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MembershipStatus {
    /// Hired but waiting for the board's approval: it cannot act yet.
    Pending,
    Active,
    /// Terminated: it can never act again.
    Archived,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMembership {
    pub id: String,
    pub company_id: String,
    pub principal_type: &'static str,
    pub principal_id: String,
    pub status: MembershipStatus,
    pub membership_role: &'static str,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionGrant {
    pub id: String,
    pub company_id: String,
    pub principal_type: &'static str,
    pub principal_id: String,
    pub permission_key: &'static str,
    pub scope: Option<Value>,
    /// Who granted it: not recorded here (the hire's activity row says who
    /// hired the agent), so unknown.
    pub granted_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentAccess {
    pub can_assign_tasks: bool,
    pub task_assign_source: TaskAssignSource,
    pub membership: Option<AgentMembership>,
    pub grants: Vec<PermissionGrant>,
}

const PRINCIPAL_AGENT: &str = "agent";
const TASKS_ASSIGN: &str = "tasks:assign";

/// Whether the agent may hand a task to another agent: the rule the issue
/// routes enforce. An explicit `canAssignTasks: false` takes the right away
/// whatever the role; anything else (the key unset included) leaves it.
pub fn may_assign_tasks(agent: &Agent) -> bool {
    membership_status(agent.status) == MembershipStatus::Active
        && agent
            .permissions
            .get("canAssignTasks")
            .and_then(Value::as_bool)
            != Some(false)
}

fn membership_status(status: AgentStatus) -> MembershipStatus {
    match status {
        AgentStatus::PendingApproval => MembershipStatus::Pending,
        AgentStatus::Terminated => MembershipStatus::Archived,
        _ => MembershipStatus::Active,
    }
}

/// Whether the agent may hire (`permissions.canCreateAgents`): the one
/// reading of the grant, for every route that checks it.
pub fn may_create_agents(agent: &Agent) -> bool {
    agent
        .permissions
        .get("canCreateAgents")
        .and_then(Value::as_bool)
        == Some(true)
}

/// The agent's access, upstream's shape.
pub fn of(agent: &Agent) -> AgentAccess {
    let can = may_assign_tasks(agent);
    let creator = may_create_agents(agent);
    let task_assign_source = match () {
        _ if !can => TaskAssignSource::None,
        _ if agent.role == AgentRole::Ceo => TaskAssignSource::CeoRole,
        _ if creator => TaskAssignSource::AgentCreator,
        _ => TaskAssignSource::ExplicitGrant,
    };
    let membership = AgentMembership {
        id: derived_id(&agent.id, 0x6d65_6d62),
        company_id: agent.company_id.clone(),
        principal_type: PRINCIPAL_AGENT,
        principal_id: agent.id.clone(),
        status: membership_status(agent.status),
        membership_role: "member",
        created_at: agent.created_at.clone(),
        updated_at: agent.created_at.clone(),
    };
    // The grant is held while the permission allows it, even by a
    // suspended member (upstream keeps grants of a member who cannot act).
    let holds_grant = agent
        .permissions
        .get("canAssignTasks")
        .and_then(Value::as_bool)
        != Some(false);
    let grants = holds_grant
        .then(|| PermissionGrant {
            id: derived_id(&agent.id, 0x7461_736b),
            company_id: agent.company_id.clone(),
            principal_type: PRINCIPAL_AGENT,
            principal_id: agent.id.clone(),
            permission_key: TASKS_ASSIGN,
            scope: None,
            granted_by_user_id: None,
            created_at: agent.created_at.clone(),
            // The permission is part of the agent row: its last change is
            // the row's.
            updated_at: agent.updated_at.clone(),
        })
        .into_iter()
        .collect();
    AgentAccess {
        can_assign_tasks: can,
        task_assign_source,
        membership: Some(membership),
        grants,
    }
}

/// A stable id for a row derived from the agent: its id with the first
/// 32 bits flipped by `salt` (a UUID keeps its version and variant, and two
/// salts never give the same id for one agent).
fn derived_id(agent_id: &str, salt: u32) -> String {
    match agent_id
        .get(..8)
        .and_then(|head| u32::from_str_radix(head, 16).ok())
    {
        Some(head) => format!("{:08x}{}", head ^ salt, &agent_id[8..]),
        None => format!("{salt:08x}-{agent_id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(role: AgentRole, status: AgentStatus, permissions: Value) -> Agent {
        Agent {
            id: "0b6f2a1e-49f9-4746-a80f-97b282e3632a".into(),
            company_id: "c1".into(),
            name: "Ann".into(),
            role,
            title: None,
            icon: None,
            status,
            reports_to: None,
            capabilities: None,
            adapter_type: "process".into(),
            adapter_config: json!({}),
            runtime_config: json!({}),
            budget_monthly_cents: 0,
            spent_monthly_cents: 0,
            pause_reason: None,
            paused_at: None,
            error_reason: None,
            permissions,
            last_heartbeat_at: None,
            metadata: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-02T00:00:00.000Z".into(),
            url_key: "ann".into(),
            usage_limited_until: None,
        }
    }

    #[test]
    fn sources_follow_upstreams_order() {
        use AgentRole::{Ceo, Engineer};
        use AgentStatus::Idle;
        let cases = [
            (
                Ceo,
                json!({"canCreateAgents": true}),
                true,
                TaskAssignSource::CeoRole,
            ),
            (
                Engineer,
                json!({"canCreateAgents": true}),
                true,
                TaskAssignSource::AgentCreator,
            ),
            (Engineer, json!({}), true, TaskAssignSource::ExplicitGrant),
            (
                Engineer,
                json!({"canAssignTasks": true}),
                true,
                TaskAssignSource::ExplicitGrant,
            ),
            (
                Engineer,
                json!({"canCreateAgents": true, "canAssignTasks": false}),
                false,
                TaskAssignSource::None,
            ),
            (
                Ceo,
                json!({"canAssignTasks": false}),
                false,
                TaskAssignSource::None,
            ),
        ];
        for (role, permissions, can, source) in cases {
            let a = agent(role, Idle, permissions.clone());
            let access = of(&a);
            assert_eq!(access.can_assign_tasks, can, "{permissions}");
            assert_eq!(may_assign_tasks(&a), can, "{permissions}");
            assert_eq!(access.task_assign_source, source, "{permissions}");
            assert_eq!(access.grants.len(), usize::from(can), "{permissions}");
        }
    }

    #[test]
    fn an_agent_that_cannot_act_cannot_assign() {
        for (status, membership) in [
            (AgentStatus::Paused, MembershipStatus::Active),
            (AgentStatus::PendingApproval, MembershipStatus::Pending),
            (AgentStatus::Terminated, MembershipStatus::Archived),
        ] {
            let access = of(&agent(AgentRole::Ceo, status, json!({})));
            let m = access.membership.expect("a membership");
            assert_eq!(m.status, membership);
            let active = membership == MembershipStatus::Active;
            assert_eq!(access.can_assign_tasks, active, "{status:?}");
            assert_eq!(
                access.grants.len(),
                1,
                "the grant outlives the right to act"
            );
        }
    }

    #[test]
    fn shape_and_ids_are_upstreams_and_stable() {
        let a = agent(AgentRole::Engineer, AgentStatus::Idle, json!({}));
        let v = serde_json::to_value(of(&a)).unwrap();
        assert_eq!(v["taskAssignSource"], "explicit_grant");
        assert_eq!(v["membership"]["principalType"], "agent");
        assert_eq!(v["membership"]["membershipRole"], "member");
        assert_eq!(v["membership"]["status"], "active");
        let grant = &v["grants"][0];
        assert_eq!(grant["permissionKey"], "tasks:assign");
        assert_eq!(grant["scope"], Value::Null);
        assert_eq!(grant["updatedAt"], "2026-01-02T00:00:00.000Z");
        let (mid, gid) = (
            v["membership"]["id"].as_str().unwrap(),
            grant["id"].as_str().unwrap(),
        );
        assert_ne!(mid, gid);
        assert_ne!(mid, a.id);
        assert_eq!(mid.len(), a.id.len());
        assert_eq!(&mid[8..], &a.id[8..]);
        assert_eq!(
            serde_json::to_value(of(&a)).unwrap(),
            v,
            "stable across reads"
        );
        assert!(derived_id("x", 1).ends_with("-x"));
    }
}
