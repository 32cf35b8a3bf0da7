//! The saving, where the board looks: wakes that started nothing and why,
//! spend on tasks against idle spend, spend per finished task, tokens per
//! run; and an agent's provider usage limit.

use maud::{html, Markup};
use paperclip_store::money::thrift::Thrift;

use crate::fmt::money;

/// What a skip reason means, for people.
pub fn skip_reason_text(reason: &str) -> &str {
    match reason {
        "no_work" => "nothing to do",
        "loop_held" => "agents kept waking each other",
        "self_wake" => "its own action",
        "agent_paused" => "agent paused",
        "budget_blocked" => "budget reached",
        "agent_terminated" => "agent terminated",
        "agent_pending_approval" => "awaiting hire approval",
        "disabled_by_policy" => "turned off in its heartbeat policy",
        other => other,
    }
}

/// The figures as a section; `scope` is "company" or "agent".
pub fn section(t: &Thrift) -> Markup {
    let skipped: i64 = t.wakes_skipped_24h.values().sum();
    html! {
        section.thrift data-thrift {
            h2 { "Spend and saving" }
            div.counters {
                div.counter data-counter="wakes-skipped" { b { (skipped) } span { "wakes skipped, 24 h" } }
                div.counter data-counter="spend-per-done-task" {
                    b { @match t.spend_per_done_task_cents { Some(c) => (money(c)), None => "—" } }
                    span { "spend per finished task (" (t.tasks_done) " this month)" }
                }
                div.counter data-counter="tokens-per-run" {
                    b { @match t.tokens_per_run { Some(n) => (thousands(n)), None => "—" } }
                    span { "tokens per run (" (t.runs) @if t.runs == 1 { " run)" } @else { " runs)" } }
                }
                div.counter data-counter="task-spend" { b { (money(t.task_spend_cents)) } span { "on tasks this month" } }
                div.counter.warn[t.idle_spend_cents > 0] data-counter="idle-spend" { b { (money(t.idle_spend_cents)) } span { "idle (no task) this month" } }
            }
            @if skipped > 0 {
                p.muted data-skipped-reasons {
                    "Skipped: "
                    @for (i, (reason, n)) in t.wakes_skipped_24h.iter().enumerate() {
                        @if i > 0 { " · " }
                        span data-skip-reason=(reason) { (n) " " (skip_reason_text(reason)) }
                    }
                }
            }
            @if t.unpriced_tokens > 0 {
                p.muted data-unpriced { (thousands(t.unpriced_tokens)) " tokens this month have no price (unknown model): counted in tokens, not in dollars." }
            }
        }
    }
}

/// `12,345`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// "usage limit until 14:05" (UTC) for an agent whose provider refuses it.
pub fn usage_limit(until: Option<&str>) -> Markup {
    let Some(until) = until else {
        return html! {};
    };
    let hhmm = chrono::DateTime::parse_from_rfc3339(until)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%H:%M UTC")
                .to_string()
        })
        .unwrap_or_else(|_| until.to_string());
    html! {
        span.pill.s-blocked data-usage-limited=(until) title="The provider refused the last run for a usage limit; its runs wait and start when it lifts." {
            "usage limit until " (hhmm)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_are_grouped() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
        assert_eq!(super::thousands(1234567), "1,234,567");
        assert_eq!(super::thousands(-12345), "-12,345");
    }
}
