//! An agent's API keys as the API shows them. Only the key's hash is
//! stored; the token appears once, in the answer that creates it.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentApiKey {
    pub id: String,
    pub name: String,
    pub agent_id: String,
    pub company_id: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub scope: KeyScope,
    /// The board person who created the key (the original's responsible user).
    pub responsible_user_id: Option<String>,
    /// The plaintext token: present only in the response that creates the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// What a key may do. Every key here acts fully as its agent: the
/// original's `standard` scope (it also has narrower bridge scopes, which we
/// do not issue).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct KeyScope {
    pub kind: KeyScopeKind,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyScopeKind {
    Standard,
}

impl KeyScope {
    pub const STANDARD: KeyScope = KeyScope {
        kind: KeyScopeKind::Standard,
    };
}
