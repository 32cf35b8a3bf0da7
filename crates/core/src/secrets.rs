//! Recognising secrets in configuration, so responses, revisions and logs
//! can leave them out while the store keeps them for the run.
//!
//! A secret is a string under a secret-named key, or the `value` of upstream's
//! `{ "type": "plain", "value": ... }` env binding under such a key. Through
//! the API they are write-only: responses show [`REDACTED`], and a write that
//! sends the placeholder back keeps the stored value ([`keep_secrets`]).

use serde::{Serialize, Serializer};
use serde_json::Value;

pub const REDACTED: &str = "[REDACTED]";

/// Whether a key names a credential (`OPENAI_API_KEY`, `githubToken`, `password`).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
    ]
    .iter()
    .any(|w| upper.contains(w))
}

/// A copy of `config` with every string under a secret-named key replaced by
/// [`REDACTED`], and the JSON paths that were replaced.
pub fn redact_config(config: &Value) -> (Value, Vec<Vec<String>>) {
    let mut paths = Vec::new();
    let mut out = config.clone();
    walk(&mut out, &mut Vec::new(), &mut paths);
    (out, paths)
}

fn walk(value: &mut Value, path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    if let Value::Object(map) = value {
        for (key, child) in map.iter_mut() {
            path.push(key.clone());
            if is_secret_name(key) && child.is_string() {
                *child = Value::String(REDACTED.to_string());
                found.push(path.clone());
            } else if is_secret_name(key) && child.get("value").is_some_and(Value::is_string) {
                child["value"] = Value::String(REDACTED.to_string());
                path.push("value".into());
                found.push(path.clone());
                path.pop();
            } else if !is_reference(child) {
                walk(child, path, found);
            }
            path.pop();
        }
    }
}

/// Upstream's `secret_ref` / `user_secret_ref` bindings name a secret held
/// elsewhere (`secretId`, `key`); they carry no value to hide.
fn is_reference(value: &Value) -> bool {
    matches!(
        value.get("type").and_then(Value::as_str),
        Some("secret_ref" | "user_secret_ref")
    )
}

/// Replaces every placeholder `incoming` carries at a secret path with the
/// value `current` stores there, so a client can send back the config it
/// read. A string and its `{ "type": "plain" }` form count as the same
/// secret. Errs with the dotted paths of placeholders that have nothing to
/// keep: storing the literal placeholder would silently break the run.
pub fn keep_secrets(incoming: &mut Value, current: &Value) -> Result<(), Vec<String>> {
    let (_, paths) = redact_config(incoming);
    let mut missing = Vec::new();
    for path in paths {
        if get_path(incoming, &path).and_then(Value::as_str) != Some(REDACTED) {
            continue;
        }
        match stored_secret(current, &path) {
            Some(secret) => set_path(incoming, &path, Value::String(secret)),
            None => missing.push(path.join(".")),
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

fn stored_secret(current: &Value, path: &[String]) -> Option<String> {
    let entry = match path.split_last() {
        Some((last, parent)) if last == "value" => get_path(current, parent)?,
        _ => get_path(current, path)?,
    };
    match entry {
        Value::String(s) => Some(s.clone()),
        other => other
            .get("value")
            .and_then(Value::as_str)
            .map(str::to_string),
    }
}

/// `serialize_with` for an agent's `adapterConfig`: whatever serialises an
/// agent (a route, a live event, a future page) shows secrets redacted.
pub fn serialize_redacted<S: Serializer>(config: &Value, s: S) -> Result<S::Ok, S::Error> {
    redact_config(config).0.serialize(s)
}

/// The same for an approval's payload: a hire carries the new agent's
/// `adapterConfig`. Only that subtree is redacted, since free-form payloads
/// use names like `author` that the name rule would take for credentials.
pub fn redact_payload(payload: &Value) -> Value {
    let mut out = payload.clone();
    if let Some(config) = payload.get("adapterConfig") {
        out["adapterConfig"] = redact_config(config).0;
    }
    out
}

pub fn serialize_redacted_payload<S: Serializer>(payload: &Value, s: S) -> Result<S::Ok, S::Error> {
    redact_payload(payload).serialize(s)
}

pub fn get_path<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

pub fn set_path(value: &mut Value, path: &[String], new: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cursor = value;
    for key in parents {
        if !cursor.get(key).is_some_and(Value::is_object) {
            cursor[key.as_str()] = Value::Object(Default::default());
        }
        cursor = cursor.get_mut(key).expect("just ensured");
    }
    cursor[last.as_str()] = new;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secret_values_are_replaced_and_their_paths_listed() {
        let (out, paths) = redact_config(
            &json!({ "command": "x", "env": { "OPENAI_API_KEY": "sk-1", "HOME": "/h" }, "apiKey": "k" }),
        );
        assert_eq!(out["env"]["OPENAI_API_KEY"], REDACTED);
        assert_eq!(out["env"]["HOME"], "/h");
        assert_eq!(out["apiKey"], REDACTED);
        assert_eq!(out["command"], "x");
        assert_eq!(paths.len(), 2);
        let mut v = json!({});
        set_path(&mut v, &["env".into(), "A_TOKEN".into()], json!("t"));
        assert_eq!(
            get_path(&v, &["env".into(), "A_TOKEN".into()]),
            Some(&json!("t"))
        );
    }

    #[test]
    fn plain_bindings_under_secret_names_hide_their_value() {
        let config = json!({ "env": {
            "OPENAI_API_KEY": { "type": "plain", "value": "sk-1" },
            "HOME": { "type": "plain", "value": "/h" },
            "GH_TOKEN": { "type": "secret_ref", "secretId": "s1" },
        } });
        let (out, paths) = redact_config(&config);
        assert_eq!(out["env"]["OPENAI_API_KEY"]["value"], REDACTED);
        assert_eq!(out["env"]["OPENAI_API_KEY"]["type"], "plain");
        assert_eq!(out["env"]["HOME"]["value"], "/h");
        assert_eq!(out["env"]["GH_TOKEN"], config["env"]["GH_TOKEN"]);
        assert_eq!(
            paths,
            vec![vec![
                "env".to_string(),
                "OPENAI_API_KEY".into(),
                "value".into()
            ]]
        );
    }

    #[test]
    fn a_placeholder_sent_back_keeps_the_stored_secret() {
        let current = json!({ "env": { "A_KEY": "sk-a", "B_TOKEN": "tok-b", "C_SECRET": "c" } });
        let mut incoming = json!({ "env": {
            "A_KEY": REDACTED,
            "B_TOKEN": "tok-new",
            "C_SECRET": { "type": "plain", "value": REDACTED },
            "HOME": "/h",
        } });
        keep_secrets(&mut incoming, &current).unwrap();
        assert_eq!(incoming["env"]["A_KEY"], "sk-a");
        assert_eq!(incoming["env"]["B_TOKEN"], "tok-new");
        assert_eq!(incoming["env"]["C_SECRET"]["value"], "c");
        assert_eq!(incoming["env"]["HOME"], "/h");
    }

    #[test]
    fn a_placeholder_with_nothing_stored_is_refused() {
        let mut incoming = json!({ "env": { "NEW_KEY": REDACTED }, "apiKey": REDACTED });
        let err = keep_secrets(&mut incoming, &json!({ "apiKey": "k" })).unwrap_err();
        assert_eq!(err, vec!["env.NEW_KEY".to_string()]);
        // A placeholder under a name that is not secret is just a string.
        let mut plain = json!({ "note": REDACTED });
        assert!(keep_secrets(&mut plain, &json!({})).is_ok());
    }

    #[test]
    fn serialising_redacts_only_the_config_of_a_payload() {
        let payload = json!({ "author": "ceo", "adapterConfig": { "env": { "X_KEY": "sk" } } });
        let out = redact_payload(&payload);
        assert_eq!(out["author"], "ceo");
        assert_eq!(out["adapterConfig"]["env"]["X_KEY"], REDACTED);
    }
}
