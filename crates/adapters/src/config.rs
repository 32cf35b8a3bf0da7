//! Small reader for `adapterConfig` objects that collects every problem with
//! its JSON path instead of stopping at the first one, so the UI can mark all
//! bad fields at once. Each adapter parses through it both when validating and
//! when invoking, so the two can never disagree.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::ConfigError;

/// The agent-runs spec's host confinement settings (`crate::confine`).
/// Only local adapters can be confined; the others refuse them rather than
/// let the board believe an agent is confined when nothing enforces it.
pub const CONFINEMENT_KEYS: &[&str] = &[
    "filesystemScope",
    "filesystemExtraPaths",
    "networkScope",
    "networkAllowlist",
];

pub struct Fields<'a> {
    obj: &'a Map<String, Value>,
    errors: Vec<ConfigError>,
}

impl<'a> Fields<'a> {
    pub fn new(config: &'a Value) -> Result<Self, Vec<ConfigError>> {
        match config {
            Value::Object(obj) => Ok(Fields {
                obj,
                errors: Vec::new(),
            }),
            _ => Err(vec![ConfigError {
                path: Vec::new(),
                message: "adapterConfig must be an object".into(),
            }]),
        }
    }

    pub fn error(&mut self, path: &[&str], message: impl Into<String>) {
        self.errors.push(ConfigError {
            path: path.iter().map(|s| s.to_string()).collect(),
            message: message.into(),
        });
    }

    /// The value under `key`; JSON `null` counts as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    pub fn string(&mut self, key: &str) -> Option<String> {
        match self.get(key)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.error(&[key], "must be a string");
                None
            }
        }
    }

    pub fn required_string(&mut self, key: &str) -> Option<String> {
        match self.get(key) {
            None => {
                self.error(&[key], "is required");
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.error(&[key], "must not be empty");
                None
            }
            Some(_) => self.string(key),
        }
    }

    pub fn string_list(&mut self, key: &str) -> Vec<String> {
        let Some(value) = self.get(key) else {
            return Vec::new();
        };
        let Value::Array(items) = value else {
            self.error(&[key], "must be an array of strings");
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.clone()),
                _ => self.error(&[key, &i.to_string()], "must be a string"),
            }
        }
        out
    }

    pub fn string_map(&mut self, key: &str) -> BTreeMap<String, String> {
        let Some(value) = self.get(key) else {
            return BTreeMap::new();
        };
        let Value::Object(map) = value else {
            self.error(&[key], "must be an object of strings");
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        for (k, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(k.clone(), s.clone());
                }
                // Upstream's explicit form of the same thing.
                Value::Object(binding)
                    if binding.get("type").and_then(Value::as_str) == Some("plain")
                        && binding.get("value").is_some_and(Value::is_string) =>
                {
                    let value = binding["value"].as_str().unwrap_or_default();
                    out.insert(k.clone(), value.to_string());
                }
                // A company secret: the runtime puts its value in place as
                // the run starts, so a config being saved only has to name
                // one well. (By invocation none is left.)
                Value::Object(_) if paperclip_core::company_secret::parse_secret_ref(v).is_some() => {
                    if let Some(Err(why)) = paperclip_core::company_secret::parse_secret_ref(v) {
                        self.error(&[key, k], &why);
                    }
                }
                _ => self.error(
                    &[key, k],
                    "must be a string, { \"type\": \"plain\", \"value\": string } or { \"type\": \"secret_ref\", \"secretId\": uuid }",
                ),
            }
        }
        out
    }

    pub fn non_negative(&mut self, key: &str, default: f64) -> f64 {
        let Some(value) = self.get(key) else {
            return default;
        };
        match value.as_f64() {
            Some(n) if n >= 0.0 && n.is_finite() => n,
            _ => {
                self.error(&[key], "must be a non-negative number");
                default
            }
        }
    }

    pub fn bool(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.error(&[key], "must be a boolean");
                default
            }
        }
    }

    /// Refuses every confinement key that is set (`null` counts as unset),
    /// for an adapter whose agent does not run as a local process.
    pub fn refuse_confinement(&mut self) {
        for key in CONFINEMENT_KEYS {
            if self.get(key).is_some() {
                self.error(
                    &[key],
                    format!(
                        "{key} applies only to agents Paperclip runs as local processes \
                         (process, claude_local, codex_local, opencode_local), which it confines \
                         with bubblewrap; this adapter's agent runs elsewhere, so it would have \
                         no effect; remove it"
                    ),
                );
            }
        }
    }

    pub fn finish<T>(self, value: T) -> Result<T, Vec<ConfigError>> {
        if self.errors.is_empty() {
            Ok(value)
        } else {
            Err(self.errors)
        }
    }
}

/// Text of a config error list for an [`crate::Outcome`] message.
pub(crate) fn describe(errors: &[ConfigError]) -> String {
    let parts: Vec<String> = errors
        .iter()
        .map(|e| {
            if e.path.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.path.join("."), e.message)
            }
        })
        .collect();
    format!("invalid adapterConfig: {}", parts.join("; "))
}

/// Cut `s` to at most `max` bytes without splitting a character.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn env_takes_strings_plain_bindings_and_well_formed_secret_refs() {
        let config = json!({ "env": {
            "A": "1",
            "B_KEY": { "type": "plain", "value": "2" },
            "C_TOKEN": { "type": "secret_ref", "secretId": "s" },
            "D_TOKEN": { "type": "secret_ref", "secretId": "0190c0de-0000-7000-8000-000000000001" },
            "E_TOKEN": { "type": "user_secret_ref", "key": "k" },
        } });
        let mut f = Fields::new(&config).unwrap();
        let env = f.string_map("env");
        assert_eq!(env.get("A").map(String::as_str), Some("1"));
        assert_eq!(env.get("B_KEY").map(String::as_str), Some("2"));
        // A reference is the runtime's to resolve; it never reaches the map.
        assert!(!env.contains_key("D_TOKEN"));
        let errors = f.finish(()).unwrap_err();
        let paths: Vec<_> = errors.iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, [["env", "C_TOKEN"], ["env", "E_TOKEN"]]);
    }
}
