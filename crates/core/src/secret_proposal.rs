//! Agent-side secrets (upstream's secret proposals and agent secret access):
//! an agent proposes a secret (its value sealed until the board decides) or
//! a binding of a secret to itself; an approved binding grants the agent
//! the secret's value during its runs. No type here carries a value out
//! except [`SecretValue`], the one answer to the agent it is granted to.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A value is at most 64 KiB, as upstream bounds it.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// A justification is at most this long (upstream's bound).
pub const MAX_JUSTIFICATION: usize = 20_000;
/// Pending proposals one agent may hold at once.
pub const MAX_PENDING_PER_AGENT: i64 = 20;
/// A pending proposal expires after 14 days.
pub const PENDING_DAYS: i64 = 14;

use crate::stored::stored_words as words;

words!(
    ProposalKind,
    "secret proposal kind",
    [Secret = "secret", Binding = "binding"]
);
words!(
    ProposalStatus,
    "secret proposal status",
    [
        Pending = "pending",
        Approved = "approved",
        Rejected = "rejected",
        Withdrawn = "withdrawn",
        Expired = "expired"
    ]
);

/// Whether `name` is upstream's slash-separated path: no whitespace, no
/// empty segment.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(char::is_whitespace)
        && name.split('/').all(|s| !s.is_empty())
}

/// Whether `path` is `env.<KEY>` or `access.<ALIAS>` (an identifier).
pub fn valid_config_path(path: &str) -> bool {
    let Some((head, rest)) = path.split_once('.') else {
        return false;
    };
    let mut chars = rest.chars();
    matches!(head, "env" | "access")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// How a binding delivers: `env.*` into the process (and the API), `access.*`
/// through the API only.
pub fn delivery(config_path: &str) -> &'static str {
    if config_path.starts_with("env.") {
        "env"
    } else {
        "api"
    }
}

/// What an agent sends to `POST /api/agents/me/secret-proposals`. Fields
/// are checked by kind (upstream answers 422 for a rule, 400 for shape).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewProposal {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub key: Option<String>,
    pub description: Option<String>,
    pub value: Option<String>,
    pub justification: Option<String>,
    pub secret_id: Option<String>,
    pub secret_proposal_id: Option<String>,
    pub source_config_path: Option<String>,
    pub target_agent_id: Option<String>,
    pub config_path: Option<String>,
}

/// A proposal as the API shows it: never its value.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretProposal {
    pub id: String,
    pub company_id: String,
    pub kind: ProposalKind,
    pub status: ProposalStatus,
    pub proposed_name: Option<String>,
    pub proposed_key: Option<String>,
    pub proposed_description: Option<String>,
    pub justification: String,
    pub secret_id: Option<String>,
    pub secret_proposal_id: Option<String>,
    pub target_type: Option<String>,
    pub target_id: Option<String>,
    pub config_path: Option<String>,
    pub proposed_by_agent_id: String,
    pub origin_issue_id: Option<String>,
    pub origin_run_id: Option<String>,
    pub resolved_by_user_id: Option<String>,
    pub resolved_at: Option<String>,
    pub resolution_reason: Option<String>,
    pub created_secret_id: Option<String>,
    pub expires_at: String,
    pub created_at: String,
    pub updated_at: String,
    pub secret_name: Option<String>,
    pub secret_proposal_name: Option<String>,
    #[schema(value_type = Object)]
    pub proposed_by: Value,
    #[schema(value_type = Option<Object>)]
    pub target: Value,
    #[schema(value_type = Option<Object>)]
    pub origin_issue: Value,
}

/// A secret granted to the calling agent: metadata only.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantedSecret {
    pub key: String,
    pub secret_ref: String,
    pub name: String,
    pub description: Option<String>,
    pub delivery: String,
    pub projection_class: String,
    pub latest_version: i64,
    pub version_selector: String,
    pub resolved_version: i64,
}

/// The one answer that carries a value (upstream's, `Cache-Control: no-store`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretValue {
    pub key: String,
    pub value: String,
    pub version: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::Stored;

    #[test]
    fn names_and_paths_follow_upstreams_rules() {
        assert!(valid_name("integrations/vendor/api-token"));
        assert!(!valid_name("a//b") && !valid_name("/a") && !valid_name("a b") && !valid_name(""));
        assert!(valid_config_path("env.VENDOR_TOKEN") && valid_config_path("access._x1"));
        assert!(!valid_config_path("env.1X") && !valid_config_path("other.X"));
        assert!(!valid_config_path("env.") && !valid_config_path("env.A-B"));
        assert_eq!(delivery("env.A"), "env");
        assert_eq!(delivery("access.A"), "api");
        assert_eq!(
            ProposalStatus::from_stored("withdrawn"),
            Some(ProposalStatus::Withdrawn)
        );
        assert_eq!(ProposalKind::from_stored("bogus"), None);
    }
}

impl crate::limits::Validate for NewProposal {
    // Shape bounds only (400); upstream's own limits (a value over 64 KiB, a
    // long justification) are rules the route answers 422 for.
    fn validate(&self) -> Result<(), crate::limits::Violation> {
        let opt = |field: &str, value: Option<&String>, max: usize| match value {
            Some(v) => crate::limits::text(field, v, max),
            None => Ok(()),
        };
        for (field, value) in [
            ("kind", &self.kind),
            ("name", &self.name),
            ("key", &self.key),
            ("secretId", &self.secret_id),
            ("secretProposalId", &self.secret_proposal_id),
            ("sourceConfigPath", &self.source_config_path),
            ("targetAgentId", &self.target_agent_id),
            ("configPath", &self.config_path),
        ] {
            opt(field, value.as_ref(), 500)?;
        }
        opt("description", self.description.as_ref(), 20_000)?;
        opt("justification", self.justification.as_ref(), 200_000)?;
        opt("value", self.value.as_ref(), 512 * 1024)
    }
}
