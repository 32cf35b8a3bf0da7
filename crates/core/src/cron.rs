//! Routine schedules: five-field cron expressions matched against wall-clock
//! time in an IANA time zone, and what a late scheduler owes (catch-up).
//!
//! Fields are minute (0-59), hour (0-23), day of month (1-31), month (1-12)
//! and day of week (0-6, Sunday = 0; 7 is accepted as Sunday too), each a
//! list of `*`, `N`, `N-M`, with an optional `/S` step. As in classic cron,
//! when both day fields are restricted a day matching either one matches.
//!
//! Daylight saving time: a wall-clock time that happens twice (the hour the
//! clocks go back) fires once, at its first occurrence; a time that does not
//! happen (the hour skipped going forward) fires when the gap ends, shifted
//! by the jump, so a daily 02:30 job still runs that day.

use chrono::{DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono::{NaiveTime, Timelike};
use chrono_tz::Tz;

use crate::routine::CatchUpPolicy;

/// How many missed ticks `enqueue_missed_with_cap` dispatches at most.
pub const CATCH_UP_CAP: usize = 25;
/// A schedule that ticks more often than this per day catches up once only.
const CATCH_UP_MAX_PER_DAY: usize = 24;
/// How far ahead a next tick is looked for (a Feb 29 on a Monday is rare).
const SEARCH_YEARS: i32 = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    days_restricted: bool,
    weekdays_restricted: bool,
}

impl Cron {
    pub fn parse(expression: &str) -> Result<Cron, String> {
        let fields: Vec<&str> = expression.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "Cron expression must have 5 fields (minute hour day-of-month month day-of-week), got {}",
                fields.len()
            ));
        }
        let mut weekdays = field(fields[4], 0, 7, "day of week")?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays & !(1 << 7)) | 1;
        }
        Ok(Cron {
            minutes: field(fields[0], 0, 59, "minute")?,
            hours: field(fields[1], 0, 23, "hour")?,
            days: field(fields[2], 1, 31, "day of month")?,
            months: field(fields[3], 1, 12, "month")?,
            weekdays,
            days_restricted: fields[2] != "*",
            weekdays_restricted: fields[4] != "*",
        })
    }

    fn day_matches(&self, date: NaiveDate) -> bool {
        let dom = bit(self.days, date.day());
        let dow = bit(self.weekdays, date.weekday().num_days_from_sunday());
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => dom || dow,
            (true, false) => dom,
            (false, true) => dow,
            (false, false) => true,
        }
    }

    /// The first tick strictly after `after`, in zone `tz`; `None` if the
    /// expression never matches (e.g. `0 0 31 2 *`).
    pub fn next_after(&self, tz: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = after.with_timezone(&tz).naive_local();
        let mut t = local.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let limit = local + Duration::days(366 * SEARCH_YEARS as i64);
        while t <= limit {
            if !bit(self.months, t.month()) {
                t = first_of_next_month(t)?;
                continue;
            }
            if !self.day_matches(t.date()) {
                t = t.date().succ_opt()?.and_time(NaiveTime::MIN);
                continue;
            }
            if !bit(self.hours, t.hour()) {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !bit(self.minutes, t.minute()) {
                t += Duration::minutes(1);
                continue;
            }
            match instant(tz, t) {
                Some(at) if at > after => return Some(at),
                _ => t += Duration::minutes(1),
            }
        }
        None
    }
}

/// The instant a wall-clock time names: its first occurrence when it
/// happens twice, the end of the gap (shifted by the jump) when it does not.
fn instant(tz: Tz, local: NaiveDateTime) -> Option<DateTime<Utc>> {
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
        LocalResult::None => {
            // Read with the offset in force before the jump.
            for back in 1..=3 {
                let before = local - Duration::hours(back);
                if let LocalResult::Single(t) = tz.from_local_datetime(&before) {
                    return Some(t.with_timezone(&Utc) + Duration::hours(back));
                }
            }
            None
        }
    }
}

fn first_of_next_month(t: NaiveDateTime) -> Option<NaiveDateTime> {
    let (y, m) = if t.month() == 12 {
        (t.year() + 1, 1)
    } else {
        (t.year(), t.month() + 1)
    };
    Some(NaiveDate::from_ymd_opt(y, m, 1)?.and_time(NaiveTime::MIN))
}

fn bit(set: u64, n: u32) -> bool {
    set & (1u64 << n) != 0
}

fn field(text: &str, min: u32, max: u32, name: &str) -> Result<u64, String> {
    let bad = |why: &str| Err(format!("Invalid cron {name} field '{text}': {why}"));
    let mut set = 0u64;
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => match s.parse::<u32>() {
                Ok(s) if s >= 1 && s <= max => (r, s),
                _ => return bad("a step must be a positive number"),
            },
            None => (item, 1),
        };
        let number = |s: &str| -> Result<u32, String> {
            match s.parse::<u32>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n),
                _ => Err(format!(
                    "Invalid cron {name} field '{text}': {s} is not a number from {min} to {max}"
                )),
            }
        };
        let (lo, hi) = if range == "*" {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return bad("a range must go from low to high");
            }
            (a, b)
        } else {
            let n = number(range)?;
            // `N/S`: from N to the end in steps of S.
            (n, if item.contains('/') { max } else { n })
        };
        let mut n = lo;
        while n <= hi {
            set |= 1u64 << n;
            n += step;
        }
    }
    Ok(set)
}

/// An IANA zone name (`Europe/Paris`, `UTC`).
pub fn parse_timezone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("Invalid timezone: {name}"))
}

/// What a scheduler pass owes one trigger: the ticks to dispatch (oldest
/// first) and the trigger's next tick, strictly after `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatchUp {
    pub ticks: Vec<DateTime<Utc>>,
    pub next: Option<DateTime<Utc>>,
}

/// `due` is the trigger's stored next tick. Nothing is owed before it.
/// `skip_missed` fires the latest missed tick once; `enqueue_missed_with_cap`
/// fires each missed tick up to [`CATCH_UP_CAP`], but only once for a
/// schedule that ticks more than 24 times a day (a day offline would
/// otherwise be a flood of identical tasks).
pub fn catch_up(
    cron: &Cron,
    tz: Tz,
    due: DateTime<Utc>,
    now: DateTime<Utc>,
    policy: CatchUpPolicy,
) -> CatchUp {
    if due > now {
        return CatchUp {
            ticks: Vec::new(),
            next: Some(due),
        };
    }
    let next = cron.next_after(tz, now);
    let mut missed = vec![due];
    let mut t = due;
    while missed.len() < CATCH_UP_CAP {
        match cron.next_after(tz, t) {
            Some(n) if n <= now => {
                missed.push(n);
                t = n;
            }
            _ => break,
        }
    }
    let ticks = match policy {
        CatchUpPolicy::SkipMissed => vec![*missed.last().expect("one tick")],
        CatchUpPolicy::EnqueueMissedWithCap if too_frequent(cron, tz, due) => vec![due],
        CatchUpPolicy::EnqueueMissedWithCap => missed,
    };
    CatchUp { ticks, next }
}

fn too_frequent(cron: &Cron, tz: Tz, from: DateTime<Utc>) -> bool {
    let end = from + Duration::days(1);
    let mut count = 0;
    let mut t = from - Duration::seconds(1);
    while let Some(n) = cron.next_after(tz, t) {
        if n >= end {
            break;
        }
        count += 1;
        if count > CATCH_UP_MAX_PER_DAY {
            return true;
        }
        t = n;
    }
    false
}

/// `{{name}}` placeholders in `text`, in order of first appearance.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        if valid_variable_name(name) && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
        rest = &after[end + 2..];
    }
    out
}

/// Upstream's rule for variable names: a letter, then letters, digits, `_`.
pub fn valid_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Names filled in by the server, never declared by a routine.
pub fn is_builtin(name: &str) -> bool {
    matches!(name, "date" | "timestamp")
}

/// Fills `{{name}}` from `values`, then the built-ins `{{date}}`
/// (YYYY-MM-DD, UTC) and `{{timestamp}}` (RFC 3339) from `at`. Unknown
/// placeholders are left as written.
pub fn interpolate(
    text: &str,
    values: &std::collections::BTreeMap<String, String>,
    at: DateTime<Utc>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = after[..end].trim();
        match (values.get(name), name) {
            (Some(v), _) => out.push_str(v),
            (None, "date") => out.push_str(&at.format("%Y-%m-%d").to_string()),
            (None, "timestamp") => out.push_str(&at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()),
            (None, _) => out.push_str(&rest[start..start + end + 4]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn next(expr: &str, tz: &str, after: &str) -> String {
        Cron::parse(expr)
            .unwrap()
            .next_after(parse_timezone(tz).unwrap(), at(after))
            .unwrap()
            .to_rfc3339()
    }

    #[test]
    fn fields_parse_and_bad_ones_are_refused() {
        assert!(Cron::parse("*/15 9-17 * * 1-5").is_ok());
        assert!(Cron::parse("0,30 * 1,15 */2 0,7").is_ok());
        for bad in [
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "*/0 * * * *",
            "5-1 * * * *",
            "a * * * *",
            "",
        ] {
            assert!(Cron::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn next_tick_in_utc() {
        assert_eq!(
            next("*/15 * * * *", "UTC", "2026-01-01T10:07:00Z"),
            "2026-01-01T10:15:00+00:00"
        );
        // Strictly after: a tick exactly now is not next.
        assert_eq!(
            next("0 * * * *", "UTC", "2026-01-01T10:00:00Z"),
            "2026-01-01T11:00:00+00:00"
        );
        assert_eq!(
            next("30 9 * * *", "UTC", "2026-12-31T10:00:00Z"),
            "2027-01-01T09:30:00+00:00"
        );
        assert_eq!(
            next("5/20 * * * *", "UTC", "2026-01-01T10:26:00Z"),
            "2026-01-01T10:45:00+00:00"
        );
    }

    #[test]
    fn day_of_week_and_month_days() {
        // 2026-03-01 is a Sunday: Sunday is 0 and 7.
        assert_eq!(
            next("0 9 * * 0", "UTC", "2026-02-27T00:00:00Z"),
            "2026-03-01T09:00:00+00:00"
        );
        assert_eq!(
            next("0 9 * * 7", "UTC", "2026-02-27T00:00:00Z"),
            "2026-03-01T09:00:00+00:00"
        );
        // Weekdays only: Friday evening -> Monday.
        assert_eq!(
            next("0 9 * * 1-5", "UTC", "2026-02-27T10:00:00Z"),
            "2026-03-02T09:00:00+00:00"
        );
        // The 31st skips months without one.
        assert_eq!(
            next("0 0 31 * *", "UTC", "2026-04-01T00:00:00Z"),
            "2026-05-31T00:00:00+00:00"
        );
        // Feb 29 waits for a leap year.
        assert_eq!(
            next("0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00+00:00"
        );
        // Both day fields restricted: either matches (the 1st, or a Monday).
        assert_eq!(
            next("0 0 1 * 1", "UTC", "2026-03-01T00:00:00Z"),
            "2026-03-02T00:00:00+00:00"
        );
        assert!(Cron::parse("0 0 31 2 *")
            .unwrap()
            .next_after(Tz::UTC, at("2026-01-01T00:00:00Z"))
            .is_none());
    }

    #[test]
    fn wall_clock_in_a_zone() {
        // 09:00 in Paris in winter is 08:00 UTC, in summer 07:00 UTC.
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-01-10T12:00:00Z"),
            "2026-01-11T08:00:00+00:00"
        );
        assert_eq!(
            next("0 9 * * *", "Europe/Paris", "2026-07-10T12:00:00Z"),
            "2026-07-11T07:00:00+00:00"
        );
        assert!(parse_timezone("Mars/Olympus").is_err());
    }

    #[test]
    fn spring_forward_gap_fires_when_the_gap_ends() {
        // 2026-03-08: New York skips 02:00-03:00 (EST -> EDT).
        assert_eq!(
            next("30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z"),
            // 03:30 EDT = 07:30 UTC.
            "2026-03-08T07:30:00+00:00"
        );
        // The next day 02:30 exists again (EDT).
        assert_eq!(
            next("30 2 * * *", "America/New_York", "2026-03-08T08:00:00Z"),
            "2026-03-09T06:30:00+00:00"
        );
    }

    #[test]
    fn fall_back_repeated_hour_fires_once() {
        // 2026-11-01: New York repeats 01:00-02:00 (EDT -> EST).
        let cron = Cron::parse("30 1 * * *").unwrap();
        let tz = parse_timezone("America/New_York").unwrap();
        let first = cron.next_after(tz, at("2026-11-01T04:00:00Z")).unwrap();
        assert_eq!(first, at("2026-11-01T05:30:00Z")); // 01:30 EDT
        let second = cron.next_after(tz, first).unwrap();
        assert_eq!(second, at("2026-11-02T06:30:00Z")); // the next day, EST
    }

    #[test]
    fn catch_up_per_policy() {
        let cron = Cron::parse("0 * * * *").unwrap();
        let due = at("2026-01-01T10:00:00Z");
        let now = at("2026-01-01T13:30:00Z");
        let skip = catch_up(&cron, Tz::UTC, due, now, CatchUpPolicy::SkipMissed);
        assert_eq!(skip.ticks, vec![at("2026-01-01T13:00:00Z")]);
        assert_eq!(skip.next, Some(at("2026-01-01T14:00:00Z")));
        let all = catch_up(
            &cron,
            Tz::UTC,
            due,
            now,
            CatchUpPolicy::EnqueueMissedWithCap,
        );
        assert_eq!(all.ticks.len(), 4);
        assert_eq!(all.ticks[0], due);
        assert_eq!(all.next, Some(at("2026-01-01T14:00:00Z")));
        // Not due yet: nothing, and the next tick stays.
        let early = catch_up(
            &cron,
            Tz::UTC,
            due,
            at("2026-01-01T09:59:00Z"),
            CatchUpPolicy::SkipMissed,
        );
        assert!(early.ticks.is_empty());
        assert_eq!(early.next, Some(due));
        // Days offline: capped at 25.
        let days = catch_up(
            &cron,
            Tz::UTC,
            due,
            at("2026-01-05T00:00:00Z"),
            CatchUpPolicy::EnqueueMissedWithCap,
        );
        assert_eq!(days.ticks.len(), CATCH_UP_CAP);
        // More than 24 a day: once.
        let often = Cron::parse("*/5 * * * *").unwrap();
        let once = catch_up(
            &often,
            Tz::UTC,
            due,
            now,
            CatchUpPolicy::EnqueueMissedWithCap,
        );
        assert_eq!(once.ticks, vec![due]);
    }

    #[test]
    fn variables_and_builtins() {
        assert_eq!(
            placeholders("Report {{topic}} for {{ date }} and {{topic}} {{1bad}} {{x_2}}"),
            vec!["topic", "date", "x_2"]
        );
        let mut values = std::collections::BTreeMap::new();
        values.insert("topic".to_string(), "sales".to_string());
        assert_eq!(
            interpolate(
                "{{topic}} on {{date}} at {{timestamp}} {{other}}",
                &values,
                at("2026-02-03T04:05:06Z")
            ),
            "sales on 2026-02-03 at 2026-02-03T04:05:06.000Z {{other}}"
        );
        assert_eq!(
            interpolate("open {{ end", &values, at("2026-02-03T04:05:06Z")),
            "open {{ end"
        );
    }
}
