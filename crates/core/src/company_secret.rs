//! Company secrets: values the board stores once, sealed at rest
//! ([`crate::secret_box`]), and agents' env bindings reference by id
//! (upstream's `{ "type": "secret_ref", "secretId", "version" }`). The
//! value goes in through create and rotate and comes out only into a run's
//! child environment; no entity here carries it back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::input::double_option;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretStatus {
    Active,
    /// Kept but refused at spawn, until made active again.
    Disabled,
    Archived,
}

impl SecretStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretStatus::Active => "active",
            SecretStatus::Disabled => "disabled",
            SecretStatus::Archived => "archived",
        }
    }
}

/// Where values live. Only the instance's own sealed store; upstream's
/// external vaults (AWS, GCP, Vault) are not offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretProvider {
    LocalEncrypted,
}

impl SecretProvider {
    pub fn as_str(self) -> &'static str {
        match self {
            SecretProvider::LocalEncrypted => "local_encrypted",
        }
    }
}

/// Who holds the value: Paperclip (upstream's `external_reference` secrets
/// point into a vault we do not offer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SecretManagedMode {
    PaperclipManaged,
}

/// A secret as the API shows it: never its value.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanySecret {
    pub id: String,
    pub company_id: String,
    pub key: String,
    pub name: String,
    pub provider: SecretProvider,
    pub status: SecretStatus,
    pub managed_mode: SecretManagedMode,
    pub latest_version: i64,
    pub description: Option<String>,
    pub last_rotated_at: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// What agents may read to wire a binding: a name to an id, nothing more.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretCatalogEntry {
    pub id: String,
    pub name: String,
    pub key: String,
    pub status: SecretStatus,
}

/// A sealed version as stored: base64 nonce and ciphertext, no plaintext.
#[derive(Clone)]
pub struct SealedVersion {
    pub secret_id: String,
    pub company_id: String,
    pub name: String,
    pub status: SecretStatus,
    pub version: i64,
    pub nonce: String,
    pub ciphertext: String,
}

#[derive(Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewSecret {
    pub name: String,
    pub key: Option<String>,
    pub provider: Option<SecretProvider>,
    pub managed_mode: Option<SecretManagedMode>,
    pub value: Option<String>,
    pub description: Option<String>,
}

#[derive(Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretPatch {
    pub name: Option<String>,
    pub key: Option<String>,
    pub status: Option<SecretStatus>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
}

#[derive(Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretRotation {
    pub value: Option<String>,
}

// Hand-written so that logging a request body can never print a value.
impl std::fmt::Debug for NewSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewSecret")
            .field("name", &self.name)
            .field("key", &self.key)
            .field(
                "value",
                &self.value.as_ref().map(|_| crate::secrets::REDACTED),
            )
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for SecretRotation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretRotation { .. }")
    }
}

/// The longest key upstream accepts.
pub const KEY_MAX_CHARS: usize = 120;

/// A key given explicitly must already be of key characters (upstream
/// refuses the rest); it is then lower-cased as upstream stores it.
pub fn valid_key(key: &str) -> bool {
    let key = key.trim();
    !key.is_empty()
        && key.chars().count() <= KEY_MAX_CHARS
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Upstream's key for a name (or a given key): lower case, every run of
/// other characters one `-`, no `-` at either end, at most 120 characters.
pub fn normalize_key(input: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in input.trim().to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-') {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    let out = out.trim_matches('-');
    out.chars().take(KEY_MAX_CHARS).collect::<String>()
}

/// Which version an env binding asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSelector {
    Latest,
    Exact(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub secret_id: String,
    pub version: VersionSelector,
}

/// Reads a `{ "type": "secret_ref", ... }` env binding: `None` when the
/// entry is something else (a string, a plain binding), an error naming
/// what is wrong when it is a malformed reference.
pub fn parse_secret_ref(entry: &Value) -> Option<Result<SecretRef, String>> {
    if entry.get("type").and_then(Value::as_str) != Some("secret_ref") {
        return None;
    }
    let Some(secret_id) = entry.get("secretId").and_then(Value::as_str) else {
        return Some(Err("secretId must be a string".into()));
    };
    if !is_uuid(secret_id) {
        return Some(Err("secretId must be a UUID".into()));
    }
    let version = match entry.get("version") {
        None | Some(Value::Null) => VersionSelector::Latest,
        Some(Value::String(s)) if s == "latest" => VersionSelector::Latest,
        Some(v) => match v.as_i64() {
            Some(n) if n > 0 => VersionSelector::Exact(n),
            _ => {
                return Some(Err(
                    "version must be \"latest\" or a positive integer".into()
                ))
            }
        },
    };
    Some(Ok(SecretRef {
        secret_id: secret_id.to_ascii_lowercase(),
        version,
    }))
}

/// The `env` entries of an adapter config that reference company secrets,
/// by variable name.
pub fn env_secret_refs(config: &Value) -> Vec<(String, Result<SecretRef, String>)> {
    let Some(env) = config.get("env").and_then(Value::as_object) else {
        return Vec::new();
    };
    env.iter()
        .filter_map(|(name, entry)| parse_secret_ref(entry).map(|r| (name.clone(), r)))
        .collect()
}

/// How the runtime puts a resolved value in the adapter's copy of `env`:
/// upstream's plain binding, marked so that an adapter that hands env to
/// someone else (a Kubernetes Job) keeps it with its secrets whatever the
/// variable's name.
pub fn resolved_binding(value: String) -> Value {
    serde_json::json!({ "type": "plain", "value": value, "fromSecret": true })
}

/// The `env` variables of a config that [`resolved_binding`] filled.
pub fn resolved_names(config: &Value) -> std::collections::BTreeSet<String> {
    let Some(env) = config.get("env").and_then(Value::as_object) else {
        return Default::default();
    };
    env.iter()
        .filter(|(_, v)| v.get("fromSecret").and_then(Value::as_bool) == Some(true))
        .map(|(k, _)| k.clone())
        .collect()
}

/// 8-4-4-4-12 hex digits, as upstream's `z.string().guid()` checks.
fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ID: &str = "0190C0DE-0000-7000-8000-000000000001";

    #[test]
    fn keys_are_derived_as_upstream_derives_them() {
        assert_eq!(normalize_key("  GitHub Token (prod) "), "github-token-prod");
        assert_eq!(normalize_key("OPENAI_API_KEY"), "openai_api_key");
        assert_eq!(normalize_key("a.b-c"), "a.b-c");
        assert_eq!(normalize_key("¿¿??"), "");
        assert_eq!(normalize_key(&"x".repeat(300)).len(), KEY_MAX_CHARS);
        assert!(valid_key("Deploy_Key.v2-1") && !valid_key("has space") && !valid_key(""));
        assert!(!valid_key(&"k".repeat(KEY_MAX_CHARS + 1)));
    }

    #[test]
    fn secret_refs_are_read_in_upstreams_shape() {
        let config = json!({ "env": {
            "PLAIN": "x",
            "BOUND": { "type": "plain", "value": "y" },
            "LATEST": { "type": "secret_ref", "secretId": ID },
            "NAMED_LATEST": { "type": "secret_ref", "secretId": ID, "version": "latest" },
            "PINNED": { "type": "secret_ref", "secretId": ID, "version": 2 },
            "BAD_ID": { "type": "secret_ref", "secretId": "s1" },
            "BAD_VERSION": { "type": "secret_ref", "secretId": ID, "version": 0 },
        } });
        let refs: std::collections::BTreeMap<_, _> = env_secret_refs(&config).into_iter().collect();
        assert_eq!(refs.len(), 5);
        let id = ID.to_ascii_lowercase();
        assert_eq!(
            refs["LATEST"],
            Ok(SecretRef {
                secret_id: id.clone(),
                version: VersionSelector::Latest
            })
        );
        assert_eq!(
            refs["NAMED_LATEST"].as_ref().unwrap().version,
            VersionSelector::Latest
        );
        assert_eq!(
            refs["PINNED"],
            Ok(SecretRef {
                secret_id: id,
                version: VersionSelector::Exact(2)
            })
        );
        assert!(refs["BAD_ID"].is_err() && refs["BAD_VERSION"].is_err());
        assert!(env_secret_refs(&json!({ "command": "x" })).is_empty());
    }

    #[test]
    fn a_request_body_never_debug_prints_its_value() {
        let new: NewSecret =
            serde_json::from_value(json!({ "name": "n", "value": "hunter2-secret" })).unwrap();
        let rotation: SecretRotation =
            serde_json::from_value(json!({ "value": "hunter2-secret" })).unwrap();
        assert!(!format!("{new:?}{rotation:?}").contains("hunter2"));
    }
}
