//! A routine run's dispatch fingerprint (upstream's `dispatchFingerprint`):
//! the SHA-256 of what the run would make (its payload with the resolved
//! variables, project, assignee, the routine's revision and env, and the
//! task's title and description), in a canonical JSON with sorted keys.
//!
//! It decides coalescing: a run joins a live execution only when that
//! execution was dispatched with the same fingerprint. A run with other
//! variables, another assignee, or after the routine (or its env) changed
//! makes a task of its own instead of being folded into a task that does
//! something else. The bytes hashed are the original's, so the same
//! dispatch has the same fingerprint on both servers.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What a run dispatches, as the fingerprint sees it.
pub struct Dispatched<'a> {
    /// The run's trigger payload, before the variables are merged into it.
    pub payload: Option<&'a Value>,
    pub variables: &'a BTreeMap<String, String>,
    pub project_id: Option<&'a str>,
    pub assignee_agent_id: &'a str,
    pub routine_revision_id: Option<&'a str>,
    pub env: Option<&'a Value>,
    pub title: &'a str,
    /// The task's description; none is the empty text.
    pub description: Option<&'a str>,
}

pub fn fingerprint(d: &Dispatched<'_>) -> String {
    let mut input = Map::new();
    let text = |s: Option<&str>| s.map_or(Value::Null, |s| Value::String(s.into()));
    input.insert("payload".into(), merged_payload(d.payload, d.variables));
    input.insert("projectId".into(), text(d.project_id));
    // Upstream's workspace choices: a run here never picks one.
    for key in [
        "projectWorkspaceId",
        "executionWorkspaceId",
        "executionWorkspacePreference",
        "executionWorkspaceSettings",
    ] {
        input.insert(key.into(), Value::Null);
    }
    input.insert(
        "assigneeAgentId".into(),
        Value::String(d.assignee_agent_id.into()),
    );
    input.insert("routineRevisionId".into(), text(d.routine_revision_id));
    input.insert(
        "routineEnvFingerprint".into(),
        Value::String(env_fingerprint(d.env)),
    );
    input.insert("title".into(), Value::String(d.title.into()));
    input.insert(
        "description".into(),
        Value::String(d.description.unwrap_or("").into()),
    );
    sha256_hex(&canonical(&Value::Object(input)))
}

/// The fingerprint of a routine's env (its bindings, never a secret value:
/// a secret is a reference here).
pub fn env_fingerprint(env: Option<&Value>) -> String {
    sha256_hex(&canonical(env.unwrap_or(&Value::Null)))
}

/// Upstream's run payload: the payload with the resolved variables under
/// `variables` (over any it had), or just them; the payload alone when the
/// routine has none.
pub fn merged_payload(payload: Option<&Value>, variables: &BTreeMap<String, String>) -> Value {
    if variables.is_empty() {
        return payload.cloned().unwrap_or(Value::Null);
    }
    let resolved: Map<String, Value> = variables
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let mut out = match payload {
        Some(Value::Object(p)) => p.clone(),
        _ => Map::new(),
    };
    let mut vars = match out.get("variables") {
        Some(Value::Object(v)) => v.clone(),
        _ => Map::new(),
    };
    vars.extend(resolved);
    out.insert("variables".into(), Value::Object(vars));
    Value::Object(out)
}

/// JSON with every object's keys sorted and numbers as JavaScript writes
/// them (a whole float without its `.0`).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base<'a>(vars: &'a BTreeMap<String, String>) -> Dispatched<'a> {
        Dispatched {
            payload: None,
            variables: vars,
            project_id: Some("b8721284-4cf8-49c2-b289-195c467a6446"),
            assignee_agent_id: "ad45216e-49f9-4746-a80f-97b282e3632a",
            routine_revision_id: Some("c8179fb0-4ed7-45fd-8174-ba63a890b4a0"),
            env: None,
            title: "Weekly summary",
            description: Some("Sum up the week"),
        }
    }

    #[test]
    fn the_originals_recorded_run_has_the_same_fingerprint_here() {
        // The recorded manual run of the shape contract (fixtures).
        let vars = BTreeMap::new();
        assert_eq!(
            fingerprint(&base(&vars)),
            "febf34bc405a43804fa7e037f66de8240a4940c47ba71df8564d172d7c917d1a"
        );
        assert_eq!(
            env_fingerprint(None),
            "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
        );
        // Key order does not matter; the original's hash of this env.
        let env = json!({ "TOKEN": { "type": "secret_ref",
            "secretId": "0b0c5b1e-8a1d-4c3e-9f00-1234567890ab" }, "A": "x" });
        assert_eq!(
            env_fingerprint(Some(&env)),
            "5e9ccbc327dc33b8652f1a1d0eaf0c3cdc6fd31c4d46974f329fe55a77c30318"
        );
    }

    #[test]
    fn what_the_task_would_be_changes_the_fingerprint() {
        let none = BTreeMap::new();
        let same = fingerprint(&base(&none));
        let vars = BTreeMap::from([("who".to_string(), "Ann".to_string())]);
        assert_ne!(fingerprint(&base(&vars)), same);
        let env = json!({ "A": "x" });
        let with_env = Dispatched {
            env: Some(&env),
            ..base(&none)
        };
        assert_ne!(fingerprint(&with_env), same);
        let other_agent = Dispatched {
            assignee_agent_id: "other",
            ..base(&none)
        };
        assert_ne!(fingerprint(&other_agent), same);
        let no_description = Dispatched {
            description: None,
            ..base(&none)
        };
        let empty_description = Dispatched {
            description: Some(""),
            ..base(&none)
        };
        assert_eq!(
            fingerprint(&no_description),
            fingerprint(&empty_description)
        );
    }

    #[test]
    fn variables_merge_into_the_payload() {
        let vars = BTreeMap::from([("who".to_string(), "Ann".to_string())]);
        assert_eq!(merged_payload(None, &BTreeMap::new()), Value::Null);
        assert_eq!(
            merged_payload(None, &vars),
            json!({ "variables": { "who": "Ann" } })
        );
        assert_eq!(
            merged_payload(
                Some(&json!({ "ref": "main", "variables": { "x": 1, "who": "Bo" } })),
                &vars
            ),
            json!({ "ref": "main", "variables": { "x": 1, "who": "Ann" } })
        );
        assert_eq!(
            canonical(&json!({ "b": 1.0, "a": [2.5, "é"] })),
            r#"{"a":[2.5,"é"],"b":1}"#
        );
    }
}
