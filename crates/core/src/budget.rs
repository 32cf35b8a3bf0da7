//! Monthly budgets: UTC calendar-month windows and the soft/hard thresholds.

use chrono::{DateTime, Datelike, TimeZone, Utc};

/// The UTC calendar month containing `now`, as `[start, end)` in the stored
/// timestamp format, plus its key (`2026-12`).
pub fn month_window(now: DateTime<Utc>) -> (String, String, String) {
    let start = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .expect("first of month exists");
    let (y, m) = if now.month() == 12 {
        (now.year() + 1, 1)
    } else {
        (now.year(), now.month() + 1)
    };
    let end = Utc
        .with_ymd_and_hms(y, m, 1, 0, 0, 0)
        .single()
        .expect("first of month exists");
    (
        stamp(start),
        stamp(end),
        format!("{:04}-{:02}", now.year(), now.month()),
    )
}

/// The window of a `YYYY-MM` month key, if it is one.
pub fn window_of_month(key: &str) -> Option<(String, String)> {
    let (y, m) = key.split_once('-')?;
    let (y, m): (i32, u32) = (y.parse().ok()?, m.parse().ok()?);
    let day = Utc.with_ymd_and_hms(y, m, 15, 0, 0, 0).single()?;
    let (start, end, _) = month_window(day);
    Some((start, end))
}

pub fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// What a monthly budget belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    Company,
    Agent,
    Project,
}

impl BudgetScope {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetScope::Company => "company",
            BudgetScope::Agent => "agent",
            BudgetScope::Project => "project",
        }
    }
}

/// A threshold a scope's spend crossed: `soft` (80 %, the board is warned)
/// or `hard` (100 %, work stopped).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IncidentKind {
    Soft,
    Hard,
}

impl IncidentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentKind::Soft => "soft",
            IncidentKind::Hard => "hard",
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IncidentStatus {
    Open,
    Resolved,
}

impl IncidentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentStatus::Open => "open",
            IncidentStatus::Resolved => "resolved",
        }
    }
}

/// How an incident was resolved.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum IncidentResolution {
    /// The budget now covers the month's spend.
    BudgetRaised,
    /// The board resumed an agent paused for budget.
    Override,
    /// A new UTC month began.
    MonthRollover,
}

impl IncidentResolution {
    pub fn as_str(self) -> &'static str {
        match self {
            IncidentResolution::BudgetRaised => "budget_raised",
            IncidentResolution::Override => "override",
            IncidentResolution::MonthRollover => "month_rollover",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    /// At or above 80 %: warn the board.
    Soft,
    /// At or above 100 %: stop the work.
    Hard,
}

/// Where spending stands against a budget; a budget of 0 means none is set.
pub fn level(spend_cents: i64, budget_cents: i64) -> Level {
    if budget_cents <= 0 {
        Level::Ok
    } else if spend_cents >= budget_cents {
        Level::Hard
    } else if spend_cents * 5 >= budget_cents * 4 {
        Level::Soft
    } else {
        Level::Ok
    }
}

pub fn utilization_percent(spend_cents: i64, budget_cents: i64) -> f64 {
    if budget_cents <= 0 {
        0.0
    } else {
        (spend_cents as f64 * 10000.0 / budget_cents as f64).round() / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_utc_calendar_months() {
        let t = Utc.with_ymd_and_hms(2026, 12, 31, 23, 59, 59).unwrap();
        let (start, end, key) = month_window(t);
        assert_eq!(
            (start.as_str(), end.as_str(), key.as_str()),
            (
                "2026-12-01T00:00:00.000Z",
                "2027-01-01T00:00:00.000Z",
                "2026-12"
            )
        );
        let (start, _, key) = month_window(Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap());
        assert_eq!(
            (start.as_str(), key.as_str()),
            ("2027-01-01T00:00:00.000Z", "2027-01")
        );
        assert_eq!(
            window_of_month("2027-02").unwrap().1,
            "2027-03-01T00:00:00.000Z"
        );
        assert!(window_of_month("soon").is_none());
    }

    #[test]
    fn thresholds_are_80_and_100_percent() {
        assert_eq!(level(79, 100), Level::Ok);
        assert_eq!(level(80, 100), Level::Soft);
        assert_eq!(level(99, 100), Level::Soft);
        assert_eq!(level(100, 100), Level::Hard);
        assert_eq!(level(1_000_000, 0), Level::Ok, "no budget, no stop");
        assert_eq!(utilization_percent(1, 3), 33.33);
    }
}
