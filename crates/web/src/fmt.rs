//! Small formatting rules shared by pages: status pills, money, time ago.

use chrono::{DateTime, Utc};
use maud::{html, Markup};

pub fn pill(status: &(impl AsRef<str> + ?Sized)) -> Markup {
    let status = status.as_ref();
    html! { span class={"pill s-" (status.replace('_', "-"))} data-status=(status) { (status.replace('_', " ")) } }
}

/// An adapter's status line: its message after a dot of its colour (grey
/// when it named none); the colour's name is the dot's title.
pub fn status_line(s: &paperclip_core::run_status::StatusUpdate) -> Markup {
    let color = s.color.map_or("gray", |c| c.as_str());
    html! { span class={"status-line c-" (color)} data-status-line=(color) { span.dot title=(color) {} " " (s.message) } }
}

/// `$12.34`; cents are the unit everywhere.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.abs();
    format!("{sign}${}.{:02}", c / 100, c % 100)
}

/// `12,345`: token counts are long.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A run's usage (`usageJson`) in words: its tokens and its price, or that
/// its model has none (an unpriced run is not shown as $0.00).
pub fn run_usage(usage: &serde_json::Value) -> Option<String> {
    let int = |k: &str| {
        usage
            .get(k)
            .and_then(serde_json::Value::as_i64)
            .unwrap_or(0)
    };
    let tokens = int("inputTokens") + int("cachedInputTokens") + int("outputTokens");
    let cost = usage.get("costUsd").and_then(serde_json::Value::as_f64);
    let model = usage.get("model").and_then(serde_json::Value::as_str);
    match (tokens, cost) {
        (0, None) => None,
        (t, Some(usd)) => Some(format!("{} tokens · ${usd:.4}", count(t))),
        (t, None) => Some(match model {
            Some(m) => format!("{} tokens (no price for model {m})", count(t)),
            None => format!("{} tokens (no price for its model)", count(t)),
        }),
    }
}

/// "just now", "5 min ago", "3 h ago", "2 d ago", or the date.
pub fn ago(ts: &str, now: DateTime<Utc>) -> String {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else {
        return ts.to_string();
    };
    let secs = (now - t.with_timezone(&Utc)).num_seconds();
    match secs {
        s if s < 45 => "just now".into(),
        s if s < 3600 => format!("{} min ago", (s + 30) / 60),
        s if s < 86_400 => format!("{} h ago", s / 3600),
        s if s < 14 * 86_400 => format!("{} d ago", s / 86_400),
        _ => ts.get(..10).unwrap_or(ts).to_string(),
    }
}

pub fn time(ts: &str, now: DateTime<Utc>) -> Markup {
    html! { time datetime=(ts) title=(ts) { (ago(ts, now)) } }
}

/// Why a run was woken, in words ("an @mention in a comment"), from its wake
/// source and reason; pages say this instead of `issue_comment_mentioned`.
pub fn wake_why(source: Option<&str>, reason: Option<&str>) -> String {
    paperclip_core::words::wake_why(source, reason)
}

/// Whole percent of `part` in `whole`, 0 when there is no whole.
pub fn percent(part: i64, whole: i64) -> i64 {
    if whole <= 0 {
        0
    } else {
        ((part as f64 / whole as f64) * 100.0).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_usage_says_when_a_model_has_no_price() {
        let unpriced = serde_json::json!({ "model": "mock-model", "inputTokens": 12000, "outputTokens": 345, "costUsd": null });
        assert_eq!(
            run_usage(&unpriced).as_deref(),
            Some("12,345 tokens (no price for model mock-model)")
        );
        let priced = serde_json::json!({ "inputTokens": 10, "outputTokens": 5, "costUsd": 0.0123 });
        assert_eq!(run_usage(&priced).as_deref(), Some("15 tokens · $0.0123"));
        assert_eq!(run_usage(&serde_json::json!({})), None);
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(999), "999");
    }

    #[test]
    fn money_has_two_decimals() {
        assert_eq!(money(0), "$0.00");
        assert_eq!(money(1234), "$12.34");
        assert_eq!(money(-5), "-$0.05");
    }

    #[test]
    fn times_read_as_how_long_ago() {
        let now = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(ago("2026-12-02T11:59:50Z", now), "just now");
        assert_eq!(ago("2026-12-02T11:55:00Z", now), "5 min ago");
        assert_eq!(ago("2026-12-02T09:00:00Z", now), "3 h ago");
        assert_eq!(ago("2026-11-30T12:00:00Z", now), "2 d ago");
        assert_eq!(ago("2026-10-01T12:00:00Z", now), "2026-10-01");
        assert_eq!(ago("garbage", now), "garbage");
    }

    #[test]
    fn percent_of_nothing_is_zero() {
        assert_eq!(percent(5, 0), 0);
        assert_eq!(percent(80, 100), 80);
        assert_eq!(percent(1, 3), 33);
    }
}
