//! Secret redaction for everything a run writes: logs, excerpts, events.

/// Replaces every occurrence of any secret with `[REDACTED]`. Secrets shorter
/// than 6 characters are ignored: redacting `1` or `true` would shred logs.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

pub const MARK: &str = "[REDACTED]";

impl Redactor {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 6).collect();
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MARK);
            }
        }
        out
    }

    pub fn apply_json(&self, value: &serde_json::Value) -> serde_json::Value {
        if self.secrets.is_empty() {
            return value.clone();
        }
        serde_json::from_str(&self.apply(&value.to_string())).unwrap_or_else(|_| value.clone())
    }
}

pub use paperclip_core::secrets::is_secret_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_everywhere() {
        let r = Redactor::new(["sk-live-123456".to_string(), "abc".to_string()]);
        assert_eq!(r.apply("key=sk-live-123456 abc"), "key=[REDACTED] abc");
        let v = r.apply_json(&serde_json::json!({ "env": "sk-live-123456" }));
        assert_eq!(v["env"], MARK);
        assert!(
            is_secret_name("OPENAI_API_KEY")
                && is_secret_name("github_token")
                && !is_secret_name("HOME")
        );
    }
}
