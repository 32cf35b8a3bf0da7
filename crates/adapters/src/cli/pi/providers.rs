//! `PAPERCLIP_PI_PROVIDERS`: the original's custom providers for Pi, in the
//! shape of the `providers` object of Pi's `models.json` (`baseUrl`, `api`,
//! `apiKey`, `models[]` with an optional `cost` per million tokens).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

/// Per-run agent directories live here, under the agent's scratch folder
/// (the one a confined run can see), named `run-*`.
const RUN_DIRS: &str = "agent-dirs";
/// A directory a crashed server left behind is swept after this long.
const STALE: Duration = Duration::from_secs(24 * 3600);

/// The providers, each an object. Empty text or `{}` is no providers.
pub(super) fn parse(raw: &str) -> Result<Map<String, Value>, String> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    let value: Value = serde_json::from_str(raw).map_err(|e| format!("is not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("must be a JSON object of providers (Pi's models.json `providers`)".into());
    };
    if let Some((name, _)) = map.iter().find(|(_, v)| !v.is_object()) {
        return Err(format!("provider {name:?} must be an object"));
    }
    Ok(map)
}

/// Replaces `{env:VAR}` in every string with the variable's value; one that
/// is unset stays as written (Pi may still read it as a variable name).
pub(super) fn expand(
    providers: &Map<String, Value>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Map<String, Value> {
    fn walk(v: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Value {
        match v {
            Value::String(s) => Value::String(expand_str(s, lookup)),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, lookup)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, x)| (k.clone(), walk(x, lookup)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    providers
        .iter()
        .map(|(k, v)| (k.clone(), walk(v, &lookup)))
        .collect()
}

fn expand_str(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 5..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && after[name_len..].starts_with('}');
        match valid.then(|| lookup(name)).flatten() {
            Some(value) => {
                out.push_str(&value);
                rest = &after[name_len + 1..];
            }
            None => {
                out.push_str("{env:");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `provider`'s entry for model `id` declares a `cost` table (its
/// price, zero included).
pub(super) fn declares_cost(providers: &Map<String, Value>, provider: &str, id: &str) -> bool {
    providers
        .get(provider)
        .and_then(|p| p.get("models"))
        .and_then(Value::as_array)
        .is_some_and(|models| {
            models.iter().any(|m| {
                m.get("id").and_then(Value::as_str) == Some(id)
                    && m.get("cost").is_some_and(Value::is_object)
            })
        })
}

/// Writes `{"providers": ...}` as `models.json` into a new directory of
/// this run under `scratch`, merged over the user's own `models.json`, with
/// everything else of the user's agent directory (logins, settings, skills)
/// linked in. Only the owner can read it: it may hold keys.
pub(super) fn write_agent_dir(
    scratch: &Path,
    providers: &Map<String, Value>,
    user_dir: Option<&Path>,
) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let parent = scratch.join(RUN_DIRS);
    std::fs::create_dir_all(&parent)?;
    sweep(&parent);
    let dir = loop {
        let name = format!(
            "run-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        let dir = parent.join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let mut models = user_dir
        .and_then(|d| std::fs::read_to_string(d.join("models.json")).ok())
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let merged = models
        .as_object_mut()
        .expect("an object")
        .entry("providers")
        .or_insert_with(|| Value::Object(Map::new()));
    if !merged.is_object() {
        *merged = Value::Object(Map::new());
    }
    let merged = merged.as_object_mut().expect("an object");
    for (name, provider) in providers {
        merged.insert(name.clone(), provider.clone());
    }
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("models.json"))?;
        std::io::Write::write_all(&mut file, format!("{models:#}\n").as_bytes())?;
        if let Some(user) = user_dir.filter(|d| d.is_dir()) {
            for entry in std::fs::read_dir(user)?.flatten() {
                if entry.file_name() != "models.json" {
                    std::os::unix::fs::symlink(entry.path(), dir.join(entry.file_name()))?;
                }
            }
        }
        Ok(())
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    Ok(dir)
}

/// Removes run directories older than [`STALE`] (a run removes its own at
/// its end; these are what a killed server left).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE);
        if old && e.file_name().to_string_lossy().starts_with("run-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_expand_and_unknown_ones_stay() {
        let providers = parse(
            r#"{"gw":{"apiKey":"{env:GW_KEY}","headers":["x-{env:NOPE}","{env:9BAD}"],"baseUrl":"http://{env:HOST}:1/v1"}}"#,
        )
        .unwrap();
        let out = expand(&providers, |n| match n {
            "GW_KEY" => Some("secret".into()),
            "HOST" => Some("127.0.0.1".into()),
            _ => None,
        });
        assert_eq!(
            Value::Object(out),
            json!({"gw":{"apiKey":"secret","headers":["x-{env:NOPE}","{env:9BAD}"],"baseUrl":"http://127.0.0.1:1/v1"}})
        );
    }

    #[test]
    fn bad_json_and_shapes_are_refused_in_words() {
        assert!(parse("{").unwrap_err().contains("not valid JSON"));
        assert!(parse("[1]").unwrap_err().contains("JSON object"));
        assert!(parse(r#"{"a":1}"#).unwrap_err().contains("\"a\""));
        assert!(parse("  ").unwrap().is_empty());
    }

    #[test]
    fn a_declared_cost_table_is_a_price_even_at_zero() {
        let p = parse(
            r#"{"ollama":{"models":[{"id":"qwen3:8b","cost":{"input":0,"output":0}},{"id":"bare"}]}}"#,
        )
        .unwrap();
        assert!(declares_cost(&p, "ollama", "qwen3:8b"));
        assert!(!declares_cost(&p, "ollama", "bare"));
        assert!(!declares_cost(&p, "other", "qwen3:8b"));
    }

    #[test]
    fn the_run_dir_merges_the_users_models_and_links_the_rest() {
        let root = std::env::temp_dir().join(format!("pi-providers-test-{}", std::process::id()));
        let user = root.join("user");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(
            user.join("models.json"),
            r#"{"providers":{"mine":{"baseUrl":"http://x"},"gw":{"old":true}}}"#,
        )
        .unwrap();
        std::fs::write(user.join("auth.json"), "{}").unwrap();
        let providers = parse(r#"{"gw":{"baseUrl":"http://gw/v1"}}"#).unwrap();
        let dir = write_agent_dir(&root.join("scratch"), &providers, Some(&user)).unwrap();
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap())
                .unwrap();
        assert_eq!(written["providers"]["mine"]["baseUrl"], "http://x");
        assert_eq!(
            written["providers"]["gw"],
            json!({"baseUrl":"http://gw/v1"})
        );
        assert!(std::fs::symlink_metadata(dir.join("auth.json"))
            .unwrap()
            .file_type()
            .is_symlink());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("models.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "readable by others: {mode:o}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
