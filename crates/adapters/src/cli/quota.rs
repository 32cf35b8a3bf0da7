//! The provider's usage windows as the CLIs report them in their streams:
//! Claude Code's `rate_limit_event` and Codex's `token_count` rate limits,
//! in the original's `QuotaWindow` shape. Nothing here asks a provider.

use paperclip_core::context::{claude_window_label, window_label, QuotaWindow};
use serde_json::Value;

use super::stream::epoch_rfc3339;

/// A `rate_limit_event`'s windows: each of `unifiedWindows` when the CLI
/// sends them, else the one window `rateLimitType` names.
pub fn claude_windows(v: &Value) -> Vec<QuotaWindow> {
    let Some(info) = v.get("rate_limit_info") else {
        return Vec::new();
    };
    let status = info.get("status").and_then(Value::as_str);
    if let Some(windows) = info.get("unifiedWindows").and_then(Value::as_object) {
        let mut out: Vec<QuotaWindow> = windows
            .iter()
            .filter_map(|(kind, w)| {
                let label = claude_window_label(kind)?;
                Some(window(
                    label.to_string(),
                    w.get("utilization").and_then(Value::as_f64).map(fraction),
                    w.get("resetsAt").and_then(Value::as_i64),
                    w.get("status").and_then(Value::as_str).or(status),
                ))
            })
            .collect();
        out.sort_by(|a, b| a.label.cmp(&b.label));
        return out;
    }
    let Some(label) = info
        .get("rateLimitType")
        .and_then(Value::as_str)
        .and_then(claude_window_label)
    else {
        return Vec::new();
    };
    vec![window(
        label.to_string(),
        info.get("utilization")
            .and_then(Value::as_f64)
            .map(fraction),
        info.get("resetsAt").and_then(Value::as_i64),
        status,
    )]
}

/// Codex's `rate_limits` (`primary`, `secondary`): percent used, the
/// window's length in minutes, and when it resets (epoch seconds, or
/// seconds from `now`).
pub fn codex_windows(rate_limits: &Value, now: i64) -> Vec<QuotaWindow> {
    ["primary", "secondary"]
        .iter()
        .filter_map(|slot| {
            let w = rate_limits.get(*slot).filter(|w| w.is_object())?;
            let minutes = w.get("window_minutes").and_then(Value::as_u64);
            let label = minutes
                .map(window_label)
                .unwrap_or_else(|| slot.to_string());
            let resets = w.get("resets_at").and_then(Value::as_i64).or_else(|| {
                w.get("resets_in_seconds")
                    .and_then(Value::as_i64)
                    .map(|s| now + s)
            });
            Some(window(
                label,
                w.get("used_percent").and_then(Value::as_f64).map(round1),
                resets,
                None,
            ))
        })
        .collect()
}

fn window(
    label: String,
    used_percent: Option<f64>,
    resets: Option<i64>,
    status: Option<&str>,
) -> QuotaWindow {
    QuotaWindow {
        label,
        used_percent,
        resets_at: resets.and_then(epoch_rfc3339),
        value_label: None,
        detail: status.map(|s| s.replace('_', " ")),
    }
}

/// Claude reports utilization as a fraction of the window.
fn fraction(u: f64) -> f64 {
    round1(u * 100.0)
}

fn round1(p: f64) -> f64 {
    (p * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// As Claude Code 2.1 printed it against the scripted provider.
    const CLAUDE_EVENT: &str = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796666232,"rateLimitType":"five_hour","isUsingOverage":false,"unifiedWindows":{"five_hour":{"utilization":0.78,"resetsAt":1796666232,"status":"allowed"},"seven_day":{"utilization":0.41,"resetsAt":1796921832,"status":"allowed"}}},"uuid":"2ecb","session_id":"f6a0"}"#;

    #[test]
    fn claude_rate_limit_event_gives_each_unified_window() {
        let v: Value = serde_json::from_str(CLAUDE_EVENT).unwrap();
        let w = claude_windows(&v);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].label, "5h");
        assert_eq!(w[0].used_percent, Some(78.0));
        assert_eq!(w[0].resets_at.as_deref(), Some("2026-12-07T17:57:12Z"));
        assert_eq!(w[0].detail.as_deref(), Some("allowed"));
        assert_eq!(w[1].label, "7d");
        assert_eq!(w[1].used_percent, Some(41.0));
        let shape = serde_json::to_value(&w[0]).unwrap();
        assert_eq!(
            shape,
            json!({"label": "5h", "usedPercent": 78.0, "resetsAt": "2026-12-07T17:57:12Z",
                   "valueLabel": null, "detail": "allowed"})
        );
    }

    #[test]
    fn claude_event_without_unified_windows_names_one() {
        let v = json!({"type": "rate_limit_event", "rate_limit_info": {
            "status": "allowed_warning", "resetsAt": 1796666232, "rateLimitType": "seven_day", "utilization": 0.9}});
        let w = claude_windows(&v);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].label, "7d");
        assert_eq!(w[0].used_percent, Some(90.0));
        assert_eq!(w[0].detail.as_deref(), Some("allowed warning"));
        assert!(claude_windows(&json!({"type": "rate_limit_event"})).is_empty());
    }

    #[test]
    fn codex_rate_limits_primary_and_secondary() {
        let v = json!({
            "primary": {"used_percent": 78.25, "window_minutes": 300, "resets_at": 1796666232},
            "secondary": {"used_percent": 12.0, "window_minutes": 10080, "resets_in_seconds": 60}
        });
        let w = codex_windows(&v, 1796666172);
        assert_eq!(w.len(), 2);
        assert_eq!((w[0].label.as_str(), w[0].used_percent), ("5h", Some(78.3)));
        assert_eq!(w[0].resets_at.as_deref(), Some("2026-12-07T17:57:12Z"));
        assert_eq!((w[1].label.as_str(), w[1].used_percent), ("7d", Some(12.0)));
        assert_eq!(w[1].resets_at.as_deref(), Some("2026-12-07T17:57:12Z"));
        assert!(codex_windows(&json!({"primary": null}), 0).is_empty());
    }
}
