//! Rules that keep agents from spending tokens for nothing: the loop breaker
//! for agents waking each other on one task, and when a provider's usage
//! limit lifts. Pure; the store keeps the counters and the times.

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Utc};

/// Agent-caused wakes one task may take within [`LOOP_WINDOW_MINUTES`]
/// without progress (a status change or a board comment) before further
/// ones are held. Two agents that answer each other reach it in a few runs;
/// a real hand-off (dev, review, fix) changes status long before.
pub const LOOP_MAX_WAKES: i64 = 8;
pub const LOOP_WINDOW_MINUTES: i64 = 30;

/// How long an agent's wakes wait after a usage-limit failure whose message
/// names no reset time.
pub const USAGE_LIMIT_BACKOFF_MINUTES: i64 = 5;

/// A task's count of agent-caused wakes since its last progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopWindow {
    pub started_at: DateTime<Utc>,
    pub wakes: i64,
    pub held: bool,
}

/// What to do with one more agent-caused wake on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopVerdict {
    /// Deliver it; the window is now this.
    Deliver(LoopWindow),
    /// This wake trips the breaker: hold it and every later one until the
    /// board releases the task.
    Trip(LoopWindow),
    /// The task is already held.
    Held,
}

/// Counts one more agent-caused wake on a task whose window is `current`
/// (none when the task had no such wakes since its last progress).
pub fn count_wake(current: Option<LoopWindow>, now: DateTime<Utc>) -> LoopVerdict {
    let window = match current {
        Some(w) if w.held => return LoopVerdict::Held,
        Some(w) if now - w.started_at < Duration::minutes(LOOP_WINDOW_MINUTES) => LoopWindow {
            wakes: w.wakes + 1,
            ..w
        },
        _ => LoopWindow {
            started_at: now,
            wakes: 1,
            held: false,
        },
    };
    if window.wakes > LOOP_MAX_WAKES {
        LoopVerdict::Trip(LoopWindow {
            held: true,
            ..window
        })
    } else {
        LoopVerdict::Deliver(window)
    }
}

/// When the usage limit a CLI reported lifts: the time it names, else
/// [`USAGE_LIMIT_BACKOFF_MINUTES`] from `now`. Understood forms: Claude
/// Code's `usage limit reached|<unix seconds>`, "try again in 2 hours 5
/// minutes" / "retry after 30 seconds", and "resets 3pm" / "try again at
/// 15:04" (UTC, the next such time). A named time more than a day away is
/// not believed.
pub fn usage_limit_lifts_at(message: &str, now: DateTime<Utc>) -> DateTime<Utc> {
    let text = message.to_ascii_lowercase();
    let named = epoch_after_bar(&text)
        .or_else(|| relative(&text).map(|d| now + d))
        .or_else(|| clock_time(&text, now));
    named
        .filter(|t| *t > now && *t - now <= Duration::hours(24))
        .unwrap_or_else(|| now + Duration::minutes(USAGE_LIMIT_BACKOFF_MINUTES))
}

fn epoch_after_bar(text: &str) -> Option<DateTime<Utc>> {
    let (_, rest) = text.split_once('|')?;
    let digits: String = rest
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let secs: i64 = digits.parse().ok()?;
    Utc.timestamp_opt(secs, 0).single()
}

/// "in 2 hours 5 minutes", "after 30 seconds", "in 45s".
fn relative(text: &str) -> Option<Duration> {
    let start = [
        "try again in ",
        "retry in ",
        "retry after ",
        "again in ",
        "resets in ",
    ]
    .iter()
    .find_map(|p| text.find(p).map(|i| i + p.len()))?;
    let mut total = Duration::zero();
    let mut words = text[start..]
        .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
        .filter(|w| !w.is_empty() && *w != "and")
        .peekable();
    let mut any = false;
    while let Some(word) = words.next() {
        let split = word
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(word.len());
        let Ok(n) = word[..split].parse::<i64>() else {
            break;
        };
        let unit = if split < word.len() {
            word[split..].to_string()
        } else {
            match words.next() {
                Some(u) => u.to_string(),
                None => break,
            }
        };
        let d = match unit.trim_end_matches('s') {
            "h" | "hr" | "hour" => Duration::hours(n),
            "m" | "min" | "minute" => Duration::minutes(n),
            "" | "sec" | "second" => Duration::seconds(n),
            _ => break,
        };
        total += d;
        any = true;
    }
    any.then_some(total)
}

/// "resets 3pm", "resets at 3:30 pm", "try again at 15:04".
fn clock_time(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let start = ["resets at ", "resets ", "try again at ", "reset at "]
        .iter()
        .find_map(|p| text.find(p).map(|i| i + p.len()))?;
    let rest = text[start..].trim_start();
    let end = rest
        .find(|c: char| {
            !(c.is_ascii_digit() || c == ':' || c == ' ' || c == 'a' || c == 'p' || c == 'm')
        })
        .unwrap_or(rest.len());
    let spec = rest[..end].replace(' ', "");
    let (clock, pm) = if let Some(c) = spec.strip_suffix("pm") {
        (c, Some(true))
    } else if let Some(c) = spec.strip_suffix("am") {
        (c, Some(false))
    } else {
        (spec.as_str(), None)
    };
    let (h, m) = match clock.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (clock.parse::<u32>().ok()?, 0),
    };
    let h = match pm {
        Some(true) if h < 12 => h + 12,
        Some(false) if h == 12 => 0,
        Some(_) if h > 12 => return None,
        _ => h,
    };
    let time = NaiveTime::from_hms_opt(h, m, 0)?;
    let today = now.date_naive().and_time(time).and_utc();
    Some(if today > now {
        today
    } else {
        today + Duration::days(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn two_agents_answering_each_other_trip_the_breaker() {
        let t0 = at("2026-12-03T10:00:00Z");
        let mut window = None;
        for i in 1..=LOOP_MAX_WAKES {
            match count_wake(window, t0 + Duration::seconds(i)) {
                LoopVerdict::Deliver(w) => window = Some(w),
                other => panic!("wake {i} should be delivered, got {other:?}"),
            }
        }
        let LoopVerdict::Trip(w) = count_wake(window, t0 + Duration::seconds(60)) else {
            panic!("the wake past the limit trips");
        };
        assert!(w.held);
        assert_eq!(
            count_wake(Some(w), t0 + Duration::hours(5)),
            LoopVerdict::Held
        );
    }

    #[test]
    fn a_window_that_aged_out_starts_over() {
        let t0 = at("2026-12-03T10:00:00Z");
        let old = LoopWindow {
            started_at: t0,
            wakes: LOOP_MAX_WAKES,
            held: false,
        };
        let later = t0 + Duration::minutes(LOOP_WINDOW_MINUTES);
        assert_eq!(
            count_wake(Some(old), later),
            LoopVerdict::Deliver(LoopWindow {
                started_at: later,
                wakes: 1,
                held: false
            })
        );
    }

    #[test]
    fn reset_times_are_read_from_what_the_cli_said() {
        let now = at("2026-12-03T10:00:00Z");
        let cases = [
            (
                "Claude AI usage limit reached|1796296800",
                "2026-12-03T11:20:00Z",
            ),
            (
                "You've hit your usage limit. Try again in 2 hours 5 minutes.",
                "2026-12-03T12:05:00Z",
            ),
            (
                "429 Too Many Requests, retry after 30 seconds",
                "2026-12-03T10:00:30Z",
            ),
            ("rate limited; try again in 45s", "2026-12-03T10:00:45Z"),
            ("5-hour limit reached ∙ resets 3pm", "2026-12-03T15:00:00Z"),
            ("usage limit, resets at 9:30 am", "2026-12-04T09:30:00Z"),
            ("try again at 15:04", "2026-12-03T15:04:00Z"),
        ];
        for (text, want) in cases {
            assert_eq!(usage_limit_lifts_at(text, now), at(want), "{text}");
        }
    }

    #[test]
    fn no_time_or_an_unbelievable_one_backs_off() {
        let now = at("2026-12-03T10:00:00Z");
        let backoff = now + Duration::minutes(USAGE_LIMIT_BACKOFF_MINUTES);
        for text in [
            "rate limit exceeded",
            "usage limit reached|1",
            "try again in 900 hours",
            "resets 25pm",
            "",
        ] {
            assert_eq!(usage_limit_lifts_at(text, now), backoff, "{text}");
        }
    }
}
