//! Automatic database backups, the pure part: how backup files are named and
//! ordered, which ones retention deletes, when the next one is due and what
//! the backup folder's state warns about (the runtime's `backups` does the
//! I/O, `GET /api/health` reports it).

use std::time::Duration;

use chrono::{DateTime, Utc};

/// What a backup file holds, by engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A SQLite database file (`VACUUM INTO`): opened as it is, restored by
    /// copying it over `paperclip.db`.
    Sqlite,
    /// `pg_dump`'s plain SQL, gzip'd: restored with `gunzip -c … | psql`.
    PostgresDump,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Sqlite => ".db",
            Format::PostgresDump => ".sql.gz",
        }
    }
}

const PREFIX: &str = "paperclip-";

/// The name of a backup taken at `at`: the time to the millisecond, so names
/// sort in the order the backups were taken and two in a row never collide.
pub fn file_name(at: DateTime<Utc>, format: Format) -> String {
    format!(
        "{PREFIX}{}{}",
        at.format("%Y%m%d-%H%M%S-%3f"),
        format.extension()
    )
}

/// Whether `name` is one of our backups of `format` (not a file in the
/// making, not something else a person keeps in the folder).
pub fn is_backup(name: &str, format: Format) -> bool {
    name.strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(format.extension()))
        .is_some_and(|stamp| {
            stamp.len() == 19
                && stamp.bytes().enumerate().all(|(i, b)| {
                    if matches!(i, 8 | 15) {
                        b == b'-'
                    } else {
                        b.is_ascii_digit()
                    }
                })
        })
}

/// The backups retention deletes: all but the newest `keep` (at least one
/// is always kept). `names` in any order; the result oldest first.
pub fn to_delete(names: &[String], keep: usize) -> Vec<String> {
    let mut sorted: Vec<&String> = names.iter().collect();
    sorted.sort();
    let extra = sorted.len().saturating_sub(keep.max(1));
    sorted.into_iter().take(extra).cloned().collect()
}

/// Whether a backup is due: none yet, or the newest is `interval` old.
pub fn due(newest_age: Option<Duration>, interval: Duration) -> bool {
    newest_age.is_none_or(|age| age >= interval)
}

/// How often the schedule looks whether a backup is due: hourly, or at the
/// interval when it is shorter. Looking (not sleeping a whole interval) keeps
/// the schedule across restarts and lets a new instance's first backup follow
/// its first company within the hour.
pub fn check_period(interval: Duration) -> Duration {
    interval.min(Duration::from_secs(3600))
}

/// The age past which the newest backup is stale: the interval, plus a
/// check period for the schedule to notice, plus an hour for the backup
/// itself, in whole hours.
pub fn max_age_hours(interval: Duration) -> u64 {
    (interval.as_secs() + 2 * 3600).div_ceil(3600).max(1)
}

/// Hours to one decimal, as the health answer gives ages.
pub fn hours(age: Duration) -> f64 {
    (age.as_secs_f64() / 360.0).round() / 10.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningCode {
    Missing,
    Stale,
    LastFailure,
    CheckFailed,
}

impl WarningCode {
    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::Missing => "database_backup_missing",
            WarningCode::Stale => "database_backup_stale",
            WarningCode::LastFailure => "database_backup_last_failure",
            WarningCode::CheckFailed => "database_backup_check_failed",
        }
    }

    /// The message a caller not signed in gets: no path, no error text.
    pub fn redacted_message(self) -> &'static str {
        match self {
            WarningCode::Missing => "There is no database backup yet.",
            WarningCode::Stale => "The newest database backup is too old.",
            WarningCode::LastFailure => "The last database backup failed.",
            WarningCode::CheckFailed => "The database backups could not be checked.",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub code: WarningCode,
    pub message: String,
}

/// What was found in the backup folder and the failure marker.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub dir: &'a str,
    /// The newest backup's age in hours; `Err` when the folder could not be
    /// read.
    pub newest_age_hours: Result<Option<f64>, String>,
    /// The last failure's message, while no backup has succeeded since.
    pub last_failure: Option<&'a str>,
    pub max_age_hours: u64,
}

pub fn warnings(facts: &Facts) -> Vec<Warning> {
    let mut out = Vec::new();
    match &facts.newest_age_hours {
        Err(err) => out.push(Warning {
            code: WarningCode::CheckFailed,
            message: format!(
                "The database backups in {} could not be read: {err}",
                facts.dir
            ),
        }),
        Ok(None) => out.push(Warning {
            code: WarningCode::Missing,
            message: format!("There is no database backup in {} yet.", facts.dir),
        }),
        Ok(Some(age)) if *age > facts.max_age_hours as f64 => out.push(Warning {
            code: WarningCode::Stale,
            message: format!(
                "The newest database backup is {age}h old, more than {}h.",
                facts.max_age_hours
            ),
        }),
        Ok(Some(_)) => {}
    }
    if let Some(message) = facts.last_failure {
        out.push(Warning {
            code: WarningCode::LastFailure,
            message: message.to_string(),
        });
    }
    out
}

/// `ok`, or `warning` when there is anything to warn about.
pub fn status(warnings: &[Warning]) -> &'static str {
    if warnings.is_empty() {
        "ok"
    } else {
        "warning"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn names_sort_in_time_order_and_are_recognised() {
        let a = file_name(at("2026-12-07T09:05:03.007Z"), Format::Sqlite);
        let b = file_name(at("2026-12-07T10:00:00.000Z"), Format::Sqlite);
        assert_eq!(a, "paperclip-20261207-090503-007.db");
        assert!(a < b);
        assert!(is_backup(&a, Format::Sqlite));
        assert!(!is_backup(&a, Format::PostgresDump));
        let dump = file_name(at("2026-12-07T10:00:00Z"), Format::PostgresDump);
        assert!(is_backup(&dump, Format::PostgresDump));
        for other in [
            "paperclip.db",
            "paperclip-20261207-090503-007.db.partial",
            "paperclip-2026120x-090503-007.db",
            "notes.db",
        ] {
            assert!(!is_backup(other, Format::Sqlite), "{other}");
        }
    }

    #[test]
    fn retention_keeps_the_newest() {
        let names: Vec<String> = ["c", "a", "d", "b"].map(String::from).to_vec();
        assert_eq!(to_delete(&names, 2), ["a", "b"]);
        assert_eq!(to_delete(&names, 7), Vec::<String>::new());
        assert_eq!(to_delete(&names, 0), ["a", "b", "c"], "one is always kept");
    }

    #[test]
    fn a_backup_is_due_when_none_is_as_new_as_the_interval() {
        let day = Duration::from_secs(86_400);
        assert!(due(None, day));
        assert!(!due(Some(Duration::from_secs(3600)), day));
        assert!(due(Some(day), day));
        assert_eq!(check_period(day), Duration::from_secs(3600));
        assert_eq!(
            check_period(Duration::from_secs(300)),
            Duration::from_secs(300)
        );
    }

    #[test]
    fn staleness_allows_a_check_and_the_backup_itself() {
        assert_eq!(max_age_hours(Duration::from_secs(86_400)), 26);
        assert_eq!(max_age_hours(Duration::from_secs(60)), 3);
        assert_eq!(hours(Duration::from_secs(5400)), 1.5);
        assert_eq!(hours(Duration::from_secs(10)), 0.0);
    }

    #[test]
    fn warnings_follow_the_facts() {
        let facts = |age: Result<Option<f64>, String>, failure: Option<&'static str>| Facts {
            dir: "/d/backups",
            newest_age_hours: age,
            last_failure: failure,
            max_age_hours: 26,
        };
        let codes = |f: Facts| warnings(&f).iter().map(|w| w.code).collect::<Vec<_>>();
        assert_eq!(codes(facts(Ok(Some(3.0)), None)), Vec::<WarningCode>::new());
        assert_eq!(codes(facts(Ok(None), None)), [WarningCode::Missing]);
        assert_eq!(codes(facts(Ok(Some(26.1)), None)), [WarningCode::Stale]);
        assert_eq!(
            codes(facts(Err("not a directory".into()), Some("disk full"))),
            [WarningCode::CheckFailed, WarningCode::LastFailure]
        );
        let w = warnings(&facts(Ok(Some(1.0)), Some("disk full")));
        assert_eq!(w[0].message, "disk full");
        assert_eq!(status(&w), "warning");
        assert_eq!(status(&[]), "ok");
        assert!(warnings(&facts(Ok(None), None))[0]
            .message
            .contains("/d/backups"));
    }
}
