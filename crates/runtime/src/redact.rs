//! Secret redaction for everything a run writes: logs, excerpts, events.

use serde_json::Value;

/// Replaces every occurrence of any secret with `[REDACTED]`. Secrets shorter
/// than 6 characters are ignored: redacting `1` or `true` would shred logs.
/// Clones share one set, so a value added during a run (a granted secret
/// the agent read) is redacted by every stream of that run from then on.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: std::sync::Arc<std::sync::RwLock<Vec<String>>>,
}

pub const MARK: &str = "[REDACTED]";

impl Redactor {
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secrets.into_iter().filter(|s| s.len() >= 6).collect();
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor {
            secrets: std::sync::Arc::new(std::sync::RwLock::new(secrets)),
        }
    }

    /// Adds a value to the set (and to every clone of this redactor).
    pub fn add(&self, secret: &str) {
        if secret.len() < 6 {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(|e| e.into_inner());
        if !secrets.iter().any(|s| s == secret) {
            secrets.push(secret.to_string());
            secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        }
    }

    fn set(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        self.secrets.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Redacts a complete text (one that will never be continued).
    pub fn apply(&self, text: &str) -> String {
        if self.set().is_empty() {
            return text.to_string();
        }
        let (out, used) = self.scan(text, true);
        debug_assert_eq!(used, text.len());
        out
    }

    /// Redacts every string (and key) inside `value`. Walking the tree rather
    /// than re-parsing redacted JSON text means there is no failure path that
    /// could hand back the original.
    pub fn apply_json(&self, value: &Value) -> Value {
        if self.set().is_empty() {
            return value.clone();
        }
        match value {
            Value::String(s) => Value::String(self.apply(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.apply_json(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (self.apply(k), self.apply_json(v)))
                    .collect(),
            ),
            // A secret made of digits would otherwise survive as a number.
            Value::Number(n) if self.apply(&n.to_string()) != n.to_string() => {
                Value::String(MARK.to_string())
            }
            other => other.clone(),
        }
    }

    /// A redactor for one stream whose text arrives in pieces.
    pub fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            redactor: self.clone(),
            held: String::new(),
        }
    }

    /// Redacts `text` from the start, stopping (unless `at_end`) where what
    /// is left could still turn out to be (part of) a secret once more text
    /// arrives. Returns the redacted output and how many bytes it consumed.
    /// Overlapping occurrences are merged, so no part of any secret survives.
    fn scan(&self, text: &str, at_end: bool) -> (String, usize) {
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        'outer: while i < text.len() {
            if !at_end && self.may_start(&text[i..]) {
                break;
            }
            if let Some(mut end) = self.match_at(text, i) {
                let mut k = i + 1;
                while k < end {
                    if text.is_char_boundary(k) {
                        if !at_end && self.may_start(&text[k..]) {
                            break 'outer;
                        }
                        if let Some(e) = self.match_at(text, k) {
                            end = end.max(e);
                        }
                    }
                    k += 1;
                }
                out.push_str(MARK);
                i = end;
                continue;
            }
            let c = text[i..].chars().next().expect("i is a char boundary");
            out.push(c);
            i += c.len_utf8();
        }
        (out, i)
    }

    /// End of the longest secret that occurs at byte `i` of `text`.
    fn match_at(&self, text: &str, i: usize) -> Option<usize> {
        let rest = &text.as_bytes()[i..];
        self.set()
            .iter()
            .find(|s| rest.starts_with(s.as_bytes()))
            .map(|s| i + s.len())
    }

    /// Whether `rest` is a proper prefix of some secret, i.e. the text that
    /// follows could complete it.
    fn may_start(&self, rest: &str) -> bool {
        self.set()
            .iter()
            .any(|s| s.len() > rest.len() && s.as_bytes().starts_with(rest.as_bytes()))
    }
}

/// Redacts one stream (a run's stdout, say) across writes: text that could be
/// the start of a secret is held back until the next write decides it, so a
/// secret split over any number of writes is still caught. At most the
/// longest secret's length (less one byte, plus any overlapping matches) is
/// ever held.
#[derive(Debug, Clone, Default)]
pub struct StreamRedactor {
    redactor: Redactor,
    held: String,
}

impl StreamRedactor {
    /// Adds text; returns what can be released now, redacted (maybe empty).
    pub fn push(&mut self, text: &str) -> String {
        if self.redactor.set().is_empty() {
            return text.to_string();
        }
        self.held.push_str(text);
        let (out, used) = self.redactor.scan(&self.held, false);
        self.held.drain(..used);
        out
    }

    /// The stream ended: releases whatever is held, redacted.
    pub fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        self.redactor.apply(&held)
    }
}

pub use paperclip_core::secrets::is_secret_name;

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor(secrets: &[&str]) -> Redactor {
        Redactor::new(secrets.iter().map(|s| s.to_string()))
    }

    /// Feeds `pieces` through a stream redactor and returns all it released.
    fn streamed(r: &Redactor, pieces: &[&str]) -> String {
        let mut s = r.stream();
        let mut out: String = pieces.iter().map(|p| s.push(p)).collect();
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn secrets_are_replaced_everywhere() {
        let r = redactor(&["sk-live-123456", "abc"]);
        assert_eq!(r.apply("key=sk-live-123456 abc"), "key=[REDACTED] abc");
        let v = r.apply_json(&serde_json::json!({ "env": "sk-live-123456" }));
        assert_eq!(v["env"], MARK);
        assert!(
            is_secret_name("OPENAI_API_KEY")
                && is_secret_name("github_token")
                && !is_secret_name("HOME")
        );
    }

    #[test]
    fn a_secret_split_at_every_offset_is_caught() {
        let r = redactor(&["sk-live-123456"]);
        let text = "before sk-live-123456 after";
        for cut in 0..=text.len() {
            let out = streamed(&r, &[&text[..cut], &text[cut..]]);
            assert_eq!(out, "before [REDACTED] after", "cut at {cut}");
        }
    }

    #[test]
    fn a_secret_split_into_single_bytes_is_caught() {
        let r = redactor(&["sk-live-123456"]);
        let text = "xsk-live-123456ysk-live-12345";
        let pieces: Vec<&str> = (0..text.len()).map(|i| &text[i..i + 1]).collect();
        // The trailing near-miss is released at the end, unredacted.
        assert_eq!(streamed(&r, &pieces), "x[REDACTED]ysk-live-12345");
    }

    #[test]
    fn released_text_never_contains_more_than_a_secret_prefix() {
        let r = redactor(&["sk-live-123456"]);
        let mut s = r.stream();
        assert_eq!(s.push("hello sk-live"), "hello ");
        assert_eq!(s.push("-12"), "");
        assert_eq!(s.push("x"), "sk-live-12x");
        assert_eq!(s.push("sk-live-1234"), "");
        assert_eq!(s.push("56 done"), "[REDACTED] done");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn several_secrets_across_writes() {
        let r = redactor(&["alpha-secret-1", "beta-secret-22"]);
        let text = "a=alpha-secret-1 b=beta-secret-22 a=alpha-secret-1";
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                let out = streamed(&r, &[&text[..cut], &text[cut..cut2], &text[cut2..]]);
                assert_eq!(out, "a=[REDACTED] b=[REDACTED] a=[REDACTED]");
            }
        }
    }

    #[test]
    fn secrets_sharing_a_prefix_or_overlapping() {
        // One secret is a prefix of another: the longer one wins, whole.
        let r = redactor(&["token-abcdef", "token-abcdef-long"]);
        let text = "x token-abcdef-long y token-abcdef z";
        for cut in 0..=text.len() {
            let out = streamed(&r, &[&text[..cut], &text[cut..]]);
            assert_eq!(out, "x [REDACTED] y [REDACTED] z", "cut at {cut}");
        }
        // Overlapping occurrences are removed together, leaving no tail.
        let r = redactor(&["xxabcd12", "abcd1234"]);
        let text = "<xxabcd1234>";
        for cut in 0..=text.len() {
            let out = streamed(&r, &[&text[..cut], &text[cut..]]);
            assert_eq!(out, "<[REDACTED]>", "cut at {cut}");
        }
        assert_eq!(r.apply(text), "<[REDACTED]>");
    }

    #[test]
    fn utf8_secrets_and_text() {
        let r = redactor(&["clé-secrète-ü"]);
        let text = "é→clé-secrète-ü←ß";
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        for &a in &cuts {
            for &b in cuts.iter().filter(|&&b| b >= a) {
                let out = streamed(&r, &[&text[..a], &text[a..b], &text[b..]]);
                assert_eq!(out, "é→[REDACTED]←ß", "cuts {a} {b}");
            }
        }
    }

    #[test]
    fn a_value_added_later_is_redacted_by_every_clone_and_stream() {
        let r = redactor(&["first-secret"]);
        let mut stream = r.stream();
        assert_eq!(stream.push("late-value-1 "), "late-value-1 ");
        r.add("late-value-1");
        r.add("short");
        assert_eq!(
            stream.push("then late-value-1 and short"),
            "then [REDACTED] and short"
        );
        assert_eq!(stream.finish(), "");
        assert_eq!(r.clone().apply("late-value-1"), MARK);
    }

    #[test]
    fn without_secrets_text_passes_straight_through() {
        let r = Redactor::new(Vec::new());
        let mut s = r.stream();
        assert_eq!(s.push("abc"), "abc");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn json_is_redacted_in_keys_values_and_numbers_and_never_fails_open() {
        let r = redactor(&["hunter2-secret", "12345678"]);
        let v = serde_json::json!({
            "hunter2-secret": ["say hunter2-secret", 12345678, 7, {"q": "a\"hunter2-secret"}],
        });
        let out = r.apply_json(&v).to_string();
        assert!(
            !out.contains("hunter2-secret") && !out.contains("12345678"),
            "{out}"
        );
        assert!(out.contains("[REDACTED]") && out.contains('7'), "{out}");
        // A secret containing JSON syntax used to break re-parsing, which
        // then returned the original value.
        let r = redactor(&["ab\"cd\\ef"]);
        let out = r.apply_json(&serde_json::json!({"k": "x ab\"cd\\ef y"}));
        assert_eq!(out["k"], "x [REDACTED] y");
    }
}
