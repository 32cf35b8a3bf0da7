//! Agent statuses, roles and the status state machine.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Active,
    Idle,
    Running,
    Error,
    Paused,
    PendingApproval,
    Terminated,
}

impl AgentStatus {
    pub const ALL: [AgentStatus; 7] = [
        AgentStatus::Active,
        AgentStatus::Idle,
        AgentStatus::Running,
        AgentStatus::Error,
        AgentStatus::Paused,
        AgentStatus::PendingApproval,
        AgentStatus::Terminated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Idle => "idle",
            AgentStatus::Running => "running",
            AgentStatus::Error => "error",
            AgentStatus::Paused => "paused",
            AgentStatus::PendingApproval => "pending_approval",
            AgentStatus::Terminated => "terminated",
        }
    }

    pub fn parse(s: &str) -> Option<AgentStatus> {
        AgentStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Upstream's agent state machine: idle <-> running, running -> error,
    /// error -> idle, idle/running -> paused, paused -> idle, and anything ->
    /// terminated (irreversible). `active` is upstream's synonym for a ready
    /// agent and behaves as idle. Two additions: pausing an agent in `error`
    /// (a board wants to stop a failing agent without first clearing the
    /// error), and `error -> running` (the next heartbeat is the retry).
    pub fn can_transition_to(self, to: AgentStatus) -> bool {
        use AgentStatus::*;
        if self == to {
            return self != Terminated || to == Terminated;
        }
        if self == Terminated {
            return false;
        }
        if to == Terminated {
            return true;
        }
        let ready = |s: AgentStatus| matches!(s, Idle | Active);
        match (self, to) {
            (a, b) if ready(a) && ready(b) => true,
            (a, Running) if ready(a) => true,
            (Running, b) if ready(b) => true,
            (Running, Error) => true,
            (Error, Running) => true,
            (Error, b) if ready(b) => true,
            (a, Paused) if ready(a) => true,
            (Running | Error, Paused) => true,
            (Paused, b) if ready(b) => true,
            (PendingApproval, b) if ready(b) => true,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentRole {
    Ceo,
    Cto,
    Cmo,
    Cfo,
    Security,
    Engineer,
    Designer,
    Pm,
    Qa,
    Devops,
    Researcher,
    General,
}

impl AgentRole {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentRole::Ceo => "ceo",
            AgentRole::Cto => "cto",
            AgentRole::Cmo => "cmo",
            AgentRole::Cfo => "cfo",
            AgentRole::Security => "security",
            AgentRole::Engineer => "engineer",
            AgentRole::Designer => "designer",
            AgentRole::Pm => "pm",
            AgentRole::Qa => "qa",
            AgentRole::Devops => "devops",
            AgentRole::Researcher => "researcher",
            AgentRole::General => "general",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AgentStatus::*;

    #[test]
    fn terminated_is_irreversible() {
        for to in super::AgentStatus::ALL {
            assert_eq!(Terminated.can_transition_to(to), to == Terminated, "{to:?}");
        }
    }

    #[test]
    fn every_live_status_can_be_terminated() {
        for from in [Active, Idle, Running, Error, Paused, PendingApproval] {
            assert!(from.can_transition_to(Terminated), "{from:?}");
        }
    }

    #[test]
    fn the_run_cycle_and_pause_cycle_hold() {
        assert!(Idle.can_transition_to(Running));
        assert!(Running.can_transition_to(Idle));
        assert!(Running.can_transition_to(Error));
        assert!(Error.can_transition_to(Idle));
        assert!(Idle.can_transition_to(Paused));
        assert!(Running.can_transition_to(Paused));
        assert!(Paused.can_transition_to(Idle));
        assert!(!Paused.can_transition_to(Running));
        assert!(!Idle.can_transition_to(Error));
        assert!(!PendingApproval.can_transition_to(Running));
        assert!(Error.can_transition_to(Running));
    }
}
