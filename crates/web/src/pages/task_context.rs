//! The task's context row (how full its assignee's session is, from what the
//! CLI last reported) with Compact now, and the agents' quota windows as the
//! agent pages show them ("5h 78 % · resets 15:40").

use maud::{html, Markup};
use paperclip_core::context::QuotaWindow;
use paperclip_store::runs::context::{QuotaSnapshot, TaskContext};

/// The "Context" row of the properties panel; nothing without a session.
pub fn row(issue_id: &str, ctx: Option<&TaskContext>) -> Markup {
    let Some(c) = ctx.filter(|c| c.session_id.is_some()) else {
        return html! {};
    };
    html! {
        dt { "Context" }
        dd.context-row data-context-tokens=[c.context_tokens] {
            @match &c.label {
                Some(label) => {
                    @if let Some(p) = c.percent {
                        meter.context-meter min="0" max="100" low="60" high="85" optimum="0" value=(p.min(100)) title=(label) {}
                        " "
                    }
                    span.context-label { (label) }
                }
                None => span.muted { "Not reported yet" },
            }
            @if c.can_compact {
                " " button.small type="button" data-action="POST" data-url={"/api/issues/" (issue_id) "/context/compact"}
                    data-body="{}" data-done="Compaction queued"
                    title="The agent's CLI summarises its conversation on this task to free its context window" { "Compact now" }
            }
        }
    }
}

/// A compaction in the thread: "Context compacted · 124k → 18k tokens".
pub fn compaction_divider(e: &paperclip_core::model::RunEvent) -> Markup {
    use paperclip_core::context::short_tokens;
    let tokens = |key: &str| {
        e.payload
            .as_ref()
            .and_then(|p| p.get(key))
            .and_then(serde_json::Value::as_u64)
    };
    let numbers = match (tokens("preTokens"), tokens("postTokens")) {
        (Some(a), Some(b)) => Some(format!("{} → {} tokens", short_tokens(a), short_tokens(b))),
        (Some(a), None) => Some(format!("{} tokens before", short_tokens(a))),
        _ => None,
    };
    html! {
        span.who.compaction.context-divider title="The CLI summarised its conversation to fit the model's context window" {
            "Context compacted"
            @if let Some(n) = numbers { " · " (n) }
        }
    }
}

/// "5h 78 % · resets 15:40" for each window (the agents list: the first two).
pub fn windows_line(snap: &QuotaSnapshot, max: usize) -> Markup {
    html! {
        span.quota-line title={"As " (snap.provider) " last reported it to this agent's CLI"} {
            @for (i, w) in snap.windows.iter().take(max).enumerate() {
                @if i > 0 { " · " }
                span.quota-window { (window_text(w)) }
            }
        }
    }
}

/// The agent page's table of windows.
pub fn quota_section(snap: Option<&QuotaSnapshot>) -> Markup {
    let Some(snap) = snap.filter(|s| !s.windows.is_empty()) else {
        return html! {};
    };
    html! {
        section.quota #agent-quota {
            h2 { "Provider usage windows" }
            p.muted { "As " (snap.provider) " last reported them to this agent's CLI, "
                time datetime=(snap.updated_at) { (short_time(&snap.updated_at)) } "." }
            table {
                thead { tr { th { "Window" } th { "Used" } th { "Resets" } th { "Status" } } }
                tbody {
                    @for w in &snap.windows {
                        tr {
                            td { (w.label) }
                            td { @match w.used_percent { Some(p) => { meter min="0" max="100" high="80" value=(p) {} " " (percent(p)) " %" }, None => span.muted { "—" } } }
                            td { @match &w.resets_at { Some(r) => time datetime=(r) { (short_time(r)) }, None => span.muted { "—" } } }
                            td { (w.detail.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
        }
    }
}

fn window_text(w: &QuotaWindow) -> String {
    let mut s = w.label.clone();
    if let Some(p) = w.used_percent {
        s.push_str(&format!(" {} %", percent(p)));
    }
    if let Some(r) = &w.resets_at {
        s.push_str(&format!(" · resets {}", short_time(r)));
    }
    s
}

fn percent(p: f64) -> String {
    if (p - p.round()).abs() < 0.05 {
        format!("{}", p.round() as i64)
    } else {
        format!("{p:.1}")
    }
}

/// "15:40" today, else "Dec 9 15:40" (UTC, as the server knows no zone).
fn short_time(rfc3339: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let t = t.with_timezone(&chrono::Utc);
            if t.date_naive() == chrono::Utc::now().date_naive() {
                t.format("%H:%M").to_string()
            } else {
                t.format("%b %-d %H:%M").to_string()
            }
        }
        Err(_) => rfc3339.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_as_label_percent_and_reset() {
        let w = QuotaWindow {
            label: "5h".into(),
            used_percent: Some(78.0),
            resets_at: Some("2026-12-09T15:40:00Z".into()),
            value_label: None,
            detail: None,
        };
        assert_eq!(window_text(&w), "5h 78 % · resets Dec 9 15:40");
        assert_eq!(percent(41.25), "41.2");
    }
}
