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

/// Keys upstream's UI and CLI keep in an agent's config across a change of
/// adapter type (`ADAPTER_AGNOSTIC_KEYS` in `@paperclipai/shared`), so an
/// upstream client may send them with any type: every adapter accepts them,
/// reading those it can use.
pub const UPSTREAM_AGNOSTIC_KEYS: &[&str] = &[
    "env",
    "promptTemplate",
    "instructionsFilePath",
    "cwd",
    "timeoutSec",
    "graceSec",
    "bootstrapPromptTemplate",
    "paperclipSkillSync",
];

/// The top-level `adapterConfig` keys one adapter type knows: those it
/// reads, and those upstream defines for the same type that it accepts
/// without using (an upstream client sends them; refusing them would break
/// it). Any other key is refused when a config is saved, so a setting is
/// never silently ignored; the unused ones are named in each run's log.
/// Values under a key (`env`'s names, `headers`') are the user's and are
/// not checked here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownKeys {
    pub read: Vec<&'static str>,
    pub unused: Vec<&'static str>,
}

impl KnownKeys {
    pub fn new(read: &[&'static str], unused: &[&'static str]) -> KnownKeys {
        KnownKeys::default().with(read, unused)
    }

    /// These keys too; a key both read and unused counts as read.
    pub fn with(mut self, read: &[&'static str], unused: &[&'static str]) -> KnownKeys {
        for key in read {
            if !self.read.contains(key) {
                self.read.push(key);
            }
        }
        self.unused.retain(|k| !self.read.contains(k));
        for key in unused {
            if !self.read.contains(key) && !self.unused.contains(key) {
                self.unused.push(key);
            }
        }
        self
    }

    pub fn knows(&self, key: &str) -> bool {
        self.read.contains(&key) || self.unused.contains(&key)
    }

    /// An error naming each of `keys` that `kind` does not know.
    pub fn check<'k>(
        &self,
        kind: &str,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> Result<(), Vec<ConfigError>> {
        let errors: Vec<ConfigError> = keys
            .into_iter()
            .filter(|k| !self.knows(k))
            .map(|k| ConfigError {
                path: vec![k.to_string()],
                message: self.unknown_message(kind),
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    fn unknown_message(&self, kind: &str) -> String {
        let sorted = |keys: &[&str]| {
            let mut keys = keys.to_vec();
            keys.sort_unstable();
            keys.join(", ")
        };
        let mut text = format!("unknown key for {kind}; known keys: {}", sorted(&self.read));
        if !self.unused.is_empty() {
            text.push_str(&format!(
                "; also accepted from upstream, without effect here: {}",
                sorted(&self.unused)
            ));
        }
        text
    }

    /// The keys set in `config` that have no effect on a run: upstream's
    /// accepted-but-unused ones, and unknown ones saved before keys were
    /// checked. `null` counts as unset, as everywhere in a config.
    pub fn ignored<'c>(&self, config: &'c Value) -> Vec<&'c str> {
        let Value::Object(obj) = config else {
            return Vec::new();
        };
        obj.iter()
            .filter(|(k, v)| !v.is_null() && !self.read.contains(&k.as_str()))
            .map(|(k, _)| k.as_str())
            .collect()
    }
}

/// A run-log line naming the keys of `config` the run does not use, so a
/// setting that does nothing is said rather than silently dropped.
pub(crate) fn note_ignored(
    known: &KnownKeys,
    kind: &str,
    config: &Value,
    sink: &dyn crate::RunSink,
) {
    let ignored = known.ignored(config);
    if !ignored.is_empty() {
        sink.log(
            crate::Stream::System,
            &format!(
                "[paperclip] adapterConfig keys {kind} does not use (no effect on this run): {}\n",
                ignored.join(", ")
            ),
        );
    }
}

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
        #[cfg(test)]
        READ.with(|read| read.borrow_mut().insert(key.to_string()));
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
                         (process and the coding CLIs: claude_local, gemini_local, ...), which it confines \
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
thread_local! {
    /// Every key a [`Fields`] of this thread looked up, so a test can tell
    /// that an adapter's list of keys it reads is the truth.
    static READ: std::cell::RefCell<std::collections::BTreeSet<String>> = Default::default();
}

/// For each adapter's unit test: `good` (keys it reads and upstream's it
/// accepts) is valid and every key known; `bad` is named as unknown for
/// `kind`, alone among `good`'s keys, and has no effect on validation; and
/// every key the adapter's parsing looks up is listed as read (a new
/// setting cannot be added without it; confinement keys an adapter only
/// looks up to refuse are not its).
#[cfg(test)]
pub(crate) fn assert_keys(adapter: &dyn crate::Adapter, good: Value, bad: &str) {
    let kind = adapter.kind();
    let known = adapter.known_keys();
    READ.with(|read| read.borrow_mut().clear());
    adapter
        .validate_config(&good)
        .expect("the good config is valid");
    let read = READ.with(|read| read.take());
    assert!(!read.is_empty(), "{kind} looked nothing up");
    for key in read {
        assert!(
            known.read.contains(&key.as_str()) || CONFINEMENT_KEYS.contains(&key.as_str()),
            "{kind} reads {key} but does not list it"
        );
    }
    let keys: Vec<&str> = good
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(known.check(kind, keys.iter().copied()), Ok(()), "{kind}");
    let errors = known
        .check(kind, keys.iter().copied().chain([bad]))
        .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, [bad.to_string()]);
    assert!(
        errors[0]
            .message
            .starts_with(&format!("unknown key for {kind}; known keys: ")),
        "{}",
        errors[0].message
    );
    for key in &known.read {
        assert!(errors[0].message.contains(key), "{key} not listed");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_keys_name_each_unknown_one_and_say_what_is_unused() {
        let known = KnownKeys::new(&["model", "env"], &["engine", "model"]);
        // Read wins over unused.
        assert_eq!(known.unused, ["engine"]);
        assert_eq!(known.check("x_local", ["model", "engine"]), Ok(()));
        let errors = known.check("x_local", ["model", "b", "a"]).unwrap_err();
        let paths: Vec<_> = errors.iter().map(|e| e.path.clone()).collect();
        assert_eq!(paths, [["b"], ["a"]]);
        assert_eq!(
            errors[0].message,
            "unknown key for x_local; known keys: env, model; \
             also accepted from upstream, without effect here: engine"
        );
        let config = json!({ "model": "m", "engine": "acp", "old": 1, "gone": null });
        assert_eq!(known.ignored(&config), ["engine", "old"]);
    }

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
