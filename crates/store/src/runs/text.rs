//! Agent output on its way into the database. Postgres `text` cannot hold
//! U+0000 (SQLite can), so a NUL printed by an agent would make the write
//! that records its run fail on Postgres only, leaving the run `running` and
//! its agent's later wakes queued behind it forever. Every run write that
//! carries agent-produced text goes through here; NUL becomes U+FFFD, the
//! usual stand-in for a character that cannot be represented.

use std::borrow::Cow;

use serde_json::Value;

const STAND_IN: &str = "\u{FFFD}";

pub(crate) fn storable(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', STAND_IN))
    } else {
        Cow::Borrowed(text)
    }
}

pub(crate) fn owned(text: Option<String>) -> Option<String> {
    text.map(|t| match storable(&t) {
        Cow::Borrowed(_) => t,
        Cow::Owned(clean) => clean,
    })
}

/// JSON text escapes NUL, but the strings are read back out of it (a usage's
/// model name becomes a cost event column), so they are cleaned too.
pub(crate) fn storable_json(value: Value) -> Value {
    match value {
        Value::String(s) => Value::String(owned(Some(s)).unwrap_or_default()),
        Value::Array(items) => Value::Array(items.into_iter().map(storable_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (owned(Some(k)).unwrap_or_default(), storable_json(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_is_replaced_everywhere_it_can_hide() {
        assert_eq!(storable("a\0b"), "a\u{FFFD}b");
        assert!(matches!(storable("ab"), Cow::Borrowed(_)));
        let v = storable_json(serde_json::json!({"k\0": ["x\0", 1, {"m": "\0"}]}));
        assert!(!v.to_string().contains("\\u0000"), "{v}");
        let f = crate::runs::finish::storable_finish(crate::runs::finish::Finish {
            error: Some("e\0".into()),
            stdout_excerpt: Some("a\0b".into()),
            session_id_after: Some("s\0".into()),
            ..crate::runs::finish::Finish::new(paperclip_core::heartbeat::RunStatus::Failed)
        });
        assert_eq!(f.error.as_deref(), Some("e\u{FFFD}"));
        assert_eq!(f.stdout_excerpt.as_deref(), Some("a\u{FFFD}b"));
        assert_eq!(f.session_id_after.as_deref(), Some("s\u{FFFD}"));
    }
}
