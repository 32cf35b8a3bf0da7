//! Recognising secrets in configuration, so revisions and logs can leave them out.

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
            } else {
                walk(child, path, found);
            }
            path.pop();
        }
    }
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
}
