//! People on an authenticated instance: how the instance is deployed, the
//! role a person holds in a company, and what each role may do.
//!
//! Permissions are upstream's keys (`agents:create`, `tasks:assign`, ...),
//! plus the few this build needs named where upstream checks an instance
//! admin. A role grants a fixed set of them; nothing else grants any.

use serde::{Deserialize, Serialize};

/// How the instance trusts its callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeploymentMode {
    /// One person at the machine: loopback only, no sign-in.
    LocalTrusted,
    /// People sign in; the server may listen beyond loopback.
    Authenticated,
}

impl DeploymentMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentMode::LocalTrusted => "local_trusted",
            DeploymentMode::Authenticated => "authenticated",
        }
    }

    pub fn parse(text: &str) -> Option<DeploymentMode> {
        match text {
            "local_trusted" => Some(DeploymentMode::LocalTrusted),
            "authenticated" => Some(DeploymentMode::Authenticated),
            _ => None,
        }
    }
}

/// Who can reach an authenticated instance (upstream's `deploymentExposure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exposure {
    /// A private network (a tailnet, a VPN, a LAN).
    Private,
    /// The internet: a public URL over https is required.
    Public,
}

impl Exposure {
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Private => "private",
            Exposure::Public => "public",
        }
    }

    pub fn parse(text: &str) -> Option<Exposure> {
        match text {
            "private" => Some(Exposure::Private),
            "public" => Some(Exposure::Public),
            _ => None,
        }
    }
}

/// A person's role in one company.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    /// Upstream's `operator` (its legacy `member` reads as this).
    Operator,
    Admin,
    Owner,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Operator, Role::Admin, Role::Owner];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "member" => Some(Role::Operator),
            _ => Role::ALL.into_iter().find(|r| r.as_str() == text),
        }
    }

    pub fn grants(self, permission: Permission) -> bool {
        use Permission::*;
        match self {
            Role::Owner => true,
            Role::Admin => !matches!(permission, UsersManage | DeleteCompany),
            Role::Operator => matches!(
                permission,
                Read | TasksMutate | TasksAssign | AgentWake | SecretsManage
            ),
            Role::Viewer => permission == Read,
        }
    }

    /// The permission keys this role grants, upstream's spelling.
    pub fn permission_keys(self) -> Vec<&'static str> {
        Permission::ALL
            .into_iter()
            .filter(|p| self.grants(*p))
            .map(Permission::key)
            .collect()
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a membership counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MembershipStatus {
    Active,
    /// Kept for the record (who did what) but grants nothing.
    Suspended,
}

impl MembershipStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MembershipStatus::Active => "active",
            MembershipStatus::Suspended => "suspended",
        }
    }

    pub fn parse(text: &str) -> Option<MembershipStatus> {
        match text {
            "active" => Some(MembershipStatus::Active),
            "suspended" => Some(MembershipStatus::Suspended),
            _ => None,
        }
    }
}

/// What a request needs from the caller's role in the company it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// See the company: every read.
    Read,
    /// Create, edit and comment on tasks, goals, projects, labels, documents.
    TasksMutate,
    /// Assign tasks to agents and people.
    TasksAssign,
    /// Wake an agent, cancel or interrupt its run.
    AgentWake,
    /// Hire, configure, pause, terminate agents; their keys and budgets.
    AgentsCreate,
    /// Decide approvals.
    ApprovalsDecide,
    /// Company settings, budgets, archive, costs and activity entries.
    CompanyManage,
    /// Invite people and revoke invites.
    UsersInvite,
    /// Change members' roles, suspend and remove them.
    UsersManage,
    /// Company secrets.
    SecretsManage,
    /// Delete the company and everything in it.
    DeleteCompany,
}

impl Permission {
    pub const ALL: [Permission; 11] = [
        Permission::Read,
        Permission::TasksMutate,
        Permission::TasksAssign,
        Permission::AgentWake,
        Permission::AgentsCreate,
        Permission::ApprovalsDecide,
        Permission::CompanyManage,
        Permission::UsersInvite,
        Permission::UsersManage,
        Permission::SecretsManage,
        Permission::DeleteCompany,
    ];

    /// Upstream's permission key where it has one.
    pub fn key(self) -> &'static str {
        match self {
            Permission::Read => "company:read",
            Permission::TasksMutate => "issue:mutate",
            Permission::TasksAssign => "tasks:assign",
            Permission::AgentWake => "agent:wake",
            Permission::AgentsCreate => "agents:create",
            Permission::ApprovalsDecide => "joins:approve",
            Permission::CompanyManage => "company:manage",
            Permission::UsersInvite => "users:invite",
            Permission::UsersManage => "users:manage_permissions",
            Permission::SecretsManage => "secrets:manage",
            Permission::DeleteCompany => "company:delete",
        }
    }

    /// What the permission lets a person do, for refusals people read.
    pub fn describe(self) -> &'static str {
        match self {
            Permission::Read => "see this company",
            Permission::TasksMutate => "change tasks",
            Permission::TasksAssign => "assign tasks",
            Permission::AgentWake => "wake agents or stop their runs",
            Permission::AgentsCreate => "hire or configure agents",
            Permission::ApprovalsDecide => "decide approvals",
            Permission::CompanyManage => "change company settings and budgets",
            Permission::UsersInvite => "invite people",
            Permission::UsersManage => "change members' roles or remove them",
            Permission::SecretsManage => "manage secrets",
            Permission::DeleteCompany => "delete the company",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_each_grants_what_the_one_below_does() {
        for pair in Role::ALL.windows(2) {
            let (lower, higher) = (pair[0], pair[1]);
            assert!(lower < higher);
            for p in Permission::ALL {
                assert!(!lower.grants(p) || higher.grants(p), "{higher} lacks {p:?}");
            }
        }
    }

    #[test]
    fn viewers_only_read_operators_work_admins_manage_owners_delete() {
        assert_eq!(Role::Viewer.permission_keys(), vec!["company:read"]);
        assert!(Role::Operator.grants(Permission::TasksMutate));
        assert!(Role::Operator.grants(Permission::AgentWake));
        assert!(!Role::Operator.grants(Permission::AgentsCreate));
        assert!(Role::Operator.grants(Permission::SecretsManage));
        assert!(Role::Admin.grants(Permission::UsersInvite));
        assert!(!Role::Admin.grants(Permission::UsersManage));
        assert!(!Role::Admin.grants(Permission::DeleteCompany));
        assert!(Role::Owner.grants(Permission::DeleteCompany));
    }

    #[test]
    fn names_read_back() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("member"), Some(Role::Operator));
        assert_eq!(Role::parse("Owner"), None);
        assert_eq!(
            MembershipStatus::parse("suspended"),
            Some(MembershipStatus::Suspended)
        );
        assert_eq!(MembershipStatus::parse("gone"), None);
    }
}
