//! The run's redaction set: every value that must not reach its output.

use serde_json::Value;

use crate::redact::{is_secret_name, Redactor};

/// Provider keys a coding CLI may be handed from the server's own
/// environment (`adapters::child_env`): their values are secrets as well.
const SERVER_KEYS: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// The run's token, the resolved secret references, what the agent's config
/// holds as secrets, and the server's provider keys.
pub(crate) fn redactor(token: &str, resolved: Vec<String>, adapter_config: &Value) -> Redactor {
    let mut secrets = vec![token.to_string()];
    secrets.extend(resolved);
    secrets.extend(config_secrets(adapter_config));
    secrets.extend(
        SERVER_KEYS
            .iter()
            .filter_map(|name| std::env::var(name).ok()),
    );
    Redactor::new(secrets)
}

/// The values in the config's `env` under a secret-looking name, then what
/// the API hides elsewhere in the config (headers, keys).
fn config_secrets(config: &Value) -> Vec<String> {
    let mut secrets = Vec::new();
    if let Some(extra) = config.get("env").and_then(Value::as_object) {
        for (k, v) in extra {
            let value = v
                .as_str()
                .or_else(|| v.get("value").and_then(Value::as_str));
            if let (true, Some(v)) = (is_secret_name(k), value) {
                secrets.push(v.to_string());
            }
        }
    }
    let (_, secret_paths) = paperclip_core::secrets::redact_config(config);
    for path in secret_paths.iter().filter(|p| p[0] != "env") {
        if let Some(v) = paperclip_core::secrets::get_path(config, path).and_then(Value::as_str) {
            secrets.push(v.to_string());
        }
    }
    secrets
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_env_values_are_collected_and_plain_ones_are_not() {
        let config = json!({
            "env": {
                "API_TOKEN": "tok-123456",
                "DB_PASSWORD": { "type": "plain", "value": "pw-abcdef" },
                "HOME_DIR": "/home/agent"
            }
        });
        let found = config_secrets(&config);
        assert!(found.contains(&"tok-123456".to_string()), "{found:?}");
        assert!(found.contains(&"pw-abcdef".to_string()), "{found:?}");
        assert!(!found.contains(&"/home/agent".to_string()), "{found:?}");
    }
}
