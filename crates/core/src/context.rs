//! How full a coding agent's session is, and what its provider's usage
//! windows say. The CLIs report tokens, not windows: the window comes from a
//! table of model families here, and an unknown model has none (a made-up
//! size would show a wrong percentage).

use serde::{Deserialize, Serialize};

/// The wake reason of a run that only compacts the session (Compact now).
pub const COMPACT_REASON: &str = "context_compaction";

/// Tokens a model's context window holds, when the family is known.
/// Claude models: 200k, 1M for the `[1m]` variants; OpenAI's GPT-5 and
/// Codex models: 272k of input; Gemini 2.5 and 3: 1M.
pub fn window_tokens(model: &str) -> Option<u64> {
    let m = model.trim().to_ascii_lowercase();
    if m.is_empty() {
        return None;
    }
    // A provider prefix (`anthropic/`, `openai/`) does not change the model.
    let name = m.rsplit('/').next().unwrap_or(&m);
    let family = name.trim_end_matches("[1m]");
    if family.starts_with("claude") || ["opus", "sonnet", "haiku"].contains(&family) {
        return Some(if name.ends_with("[1m]") {
            1_000_000
        } else {
            200_000
        });
    }
    if name.starts_with("gpt-5") || name.contains("codex") {
        return Some(272_000);
    }
    if name.starts_with("gemini-2.5") || name.starts_with("gemini-3") {
        return Some(1_000_000);
    }
    None
}

/// The command a run sends to make the CLI compact its own session; `None`
/// when the adapter has no compaction a run can ask for. Codex's `/compact`
/// is a command of its interactive UI only: `codex exec resume` sends the
/// text to the model as a message, so it is not offered.
pub fn compaction_prompt(adapter_type: &str) -> Option<&'static str> {
    match adapter_type {
        "claude_local" => Some("/compact"),
        _ => None,
    }
}

/// A session's context use as the board shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUse {
    pub tokens: u64,
    pub window_tokens: Option<u64>,
    /// Whole percent of the window, when it is known.
    pub percent: Option<u64>,
}

impl ContextUse {
    pub fn new(tokens: u64, model: Option<&str>) -> ContextUse {
        let window_tokens = model.and_then(window_tokens);
        let percent = window_tokens
            .filter(|w| *w > 0)
            .map(|w| (tokens.saturating_mul(100) + w / 2) / w);
        ContextUse {
            tokens,
            window_tokens,
            percent,
        }
    }

    /// "62 % · 124k of 200k tokens", or "124k tokens" without a window.
    pub fn label(&self) -> String {
        match (self.percent, self.window_tokens) {
            (Some(p), Some(w)) => format!(
                "{p} % · {} of {} tokens",
                short_tokens(self.tokens),
                short_tokens(w)
            ),
            _ => format!("{} tokens", short_tokens(self.tokens)),
        }
    }
}

/// 124050 → "124k", 1000000 → "1M", 950 → "950".
pub fn short_tokens(n: u64) -> String {
    if n >= 1_000_000 {
        let m = n as f64 / 1_000_000.0;
        if (m - m.round()).abs() < 0.05 {
            format!("{}M", m.round() as u64)
        } else {
            format!("{m:.1}M")
        }
    } else if n >= 1_000 {
        format!("{}k", (n + 500) / 1_000)
    } else {
        n.to_string()
    }
}

/// One rate-limit or usage window, in the original's `QuotaWindow` shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaWindow {
    pub label: String,
    /// Percent used (0-100), when reported.
    pub used_percent: Option<f64>,
    /// RFC 3339, when reported.
    pub resets_at: Option<String>,
    pub value_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The label of a window by its length: "5h", "7d", else minutes or hours.
pub fn window_label(minutes: u64) -> String {
    match minutes {
        300 => "5h".into(),
        10080 => "7d".into(),
        m if m % 1440 == 0 => format!("{}d", m / 1440),
        m if m % 60 == 0 => format!("{}h", m / 60),
        m => format!("{m}m"),
    }
}

/// Claude Code's `rateLimitType` as a window label.
pub fn claude_window_label(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "five_hour" => "5h",
        "seven_day" => "7d",
        "seven_day_opus" => "Opus 7d",
        "seven_day_sonnet" => "Sonnet 7d",
        "seven_day_overage_included" => "7d (overage)",
        "overage" => "Overage",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_by_model_family_and_none_when_unknown() {
        assert_eq!(window_tokens("claude-opus-4-5"), Some(200_000));
        assert_eq!(window_tokens("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(window_tokens("claude-haiku-4-5"), Some(200_000));
        assert_eq!(window_tokens("sonnet"), Some(200_000));
        assert_eq!(window_tokens("claude-sonnet-4-5[1m]"), Some(1_000_000));
        assert_eq!(window_tokens("opus[1m]"), Some(1_000_000));
        assert_eq!(window_tokens("gpt-5.1-codex"), Some(272_000));
        assert_eq!(window_tokens("gpt-5"), Some(272_000));
        assert_eq!(window_tokens("openai/gpt-5-mini"), Some(272_000));
        assert_eq!(window_tokens("gemini-2.5-pro"), Some(1_000_000));
        assert_eq!(window_tokens("gemini-3-flash"), Some(1_000_000));
        assert_eq!(window_tokens("llama3.1:8b"), None);
        assert_eq!(window_tokens("gpt-4o"), None);
        assert_eq!(window_tokens(""), None);
    }

    #[test]
    fn context_use_reads_as_percent_of_the_window() {
        let u = ContextUse::new(124_050, Some("claude-sonnet-4-5"));
        assert_eq!(u.percent, Some(62));
        assert_eq!(u.label(), "62 % · 124k of 200k tokens");
        let unknown = ContextUse::new(124_050, Some("llama3"));
        assert_eq!(unknown.percent, None);
        assert_eq!(unknown.label(), "124k tokens");
        assert_eq!(ContextUse::new(5, None).label(), "5 tokens");
        assert_eq!(short_tokens(1_000_000), "1M");
        assert_eq!(short_tokens(1_500_000), "1.5M");
    }

    #[test]
    fn compaction_is_offered_where_a_run_can_ask_for_it() {
        assert_eq!(compaction_prompt("claude_local"), Some("/compact"));
        assert_eq!(compaction_prompt("codex_local"), None);
        assert_eq!(compaction_prompt("process"), None);
    }

    #[test]
    fn window_labels() {
        assert_eq!(window_label(300), "5h");
        assert_eq!(window_label(10080), "7d");
        assert_eq!(window_label(60), "1h");
        assert_eq!(window_label(45), "45m");
        assert_eq!(claude_window_label("five_hour"), Some("5h"));
        assert_eq!(claude_window_label("nope"), None);
    }
}
