//! What a run says about itself while it runs, besides its output: the
//! timeline's event kinds this vocabulary owns, the short coloured status
//! line an adapter reports (seed 004's `status?: ({ message, color })`
//! hook), and whether a finished run's full log can still be read.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Run timeline (`heartbeat_run_events.event_type`) kinds of the run's
/// lifecycle and status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum RunEventType {
    /// The run was claimed and is starting (written with the claim).
    #[serde(rename = "heartbeat.started")]
    HeartbeatStarted,
    /// The agent's runtime state (last run, session, usage totals) changed
    /// as the run ended (written with the run's end).
    #[serde(rename = "runtime_state.updated")]
    RuntimeStateUpdated,
    /// The adapter reported a short status message, maybe with a colour.
    #[serde(rename = "adapter.status")]
    AdapterStatus,
}

impl RunEventType {
    pub const ALL: [RunEventType; 3] = [
        RunEventType::HeartbeatStarted,
        RunEventType::RuntimeStateUpdated,
        RunEventType::AdapterStatus,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunEventType::HeartbeatStarted => "heartbeat.started",
            RunEventType::RuntimeStateUpdated => "runtime_state.updated",
            RunEventType::AdapterStatus => "adapter.status",
        }
    }

    pub fn parse(text: &str) -> Option<RunEventType> {
        RunEventType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

/// The colours a status line may have: the board's status tones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusColor {
    Gray,
    Blue,
    Green,
    Yellow,
    Red,
}

impl StatusColor {
    pub const ALL: [StatusColor; 5] = [
        StatusColor::Gray,
        StatusColor::Blue,
        StatusColor::Green,
        StatusColor::Yellow,
        StatusColor::Red,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StatusColor::Gray => "gray",
            StatusColor::Blue => "blue",
            StatusColor::Green => "green",
            StatusColor::Yellow => "yellow",
            StatusColor::Red => "red",
        }
    }

    /// The colour `text` names (any case); an unknown one is `None`, never a
    /// default, so a typo is seen rather than shown grey.
    pub fn parse(text: &str) -> Option<StatusColor> {
        StatusColor::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(text))
    }
}

/// Longest status message kept: a status is a line, not a log.
pub const STATUS_MESSAGE_MAX: usize = 200;

/// The prefix of the status line a process agent prints on stdout:
/// `PAPERCLIP_STATUS: <colour> <message>` (the colour is optional: a first
/// word that is no colour is part of the message).
pub const STATUS_LINE_PREFIX: &str = "PAPERCLIP_STATUS:";

/// A status update: its message cut to [`STATUS_MESSAGE_MAX`] characters on
/// one line, and its colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusUpdate {
    pub message: String,
    pub color: Option<StatusColor>,
}

impl StatusUpdate {
    /// `None` for a message that is empty once trimmed.
    pub fn new(message: &str, color: Option<StatusColor>) -> Option<StatusUpdate> {
        let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
        if one_line.is_empty() {
            return None;
        }
        Some(StatusUpdate {
            message: one_line.chars().take(STATUS_MESSAGE_MAX).collect(),
            color,
        })
    }

    /// The update a line of a process agent's stdout carries, if it is a
    /// status line.
    pub fn from_line(line: &str) -> Option<StatusUpdate> {
        let rest = line.trim().strip_prefix(STATUS_LINE_PREFIX)?.trim_start();
        let (first, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        match StatusColor::parse(first) {
            Some(color) => StatusUpdate::new(after, Some(color)),
            None => StatusUpdate::new(rest, None),
        }
    }
}

/// Whether a run's full log can be read (`status` of the run log answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunLogStatus {
    Available,
    /// The run ran but its log is gone (deleted, never written, its chunks
    /// removed): the run's metadata and excerpts are all that is left.
    LogUnavailable,
}

/// What is known of a run's log when a page of it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogFacts {
    /// Queued or running: its log may still be coming.
    pub live: bool,
    /// The run was claimed (its adapter may have written).
    pub started: bool,
    /// Its end recorded where the log is.
    pub has_ref: bool,
    /// Bytes the run wrote to its log, as its end recorded.
    pub bytes: i64,
    /// The company's retention deleted it (and when).
    pub removed: bool,
    /// Where the page was asked from.
    pub offset: u64,
    /// The store returned nothing from there.
    pub read_empty: bool,
}

/// Why a finished run's log cannot be read (`None`: it can, maybe empty):
/// deleted by retention, missing from its store though the run wrote to it
/// (a file deleted, chunks gone), or never written because the run ended
/// before its adapter started.
pub fn log_unavailable(f: LogFacts) -> Option<&'static str> {
    if f.removed {
        return Some("The company's log retention deleted this run's log.");
    }
    if f.live || !f.started {
        return None;
    }
    if !f.has_ref && f.bytes == 0 {
        return Some("The run ended before its adapter started, so it wrote no log.");
    }
    if f.read_empty && (f.offset as i128) < f.bytes as i128 {
        return Some("The run's log is missing from its store (deleted or never written).");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_is_unavailable_only_when_a_finished_run_should_have_one() {
        let kept = LogFacts {
            live: false,
            started: true,
            has_ref: true,
            bytes: 120,
            removed: false,
            offset: 0,
            read_empty: false,
        };
        assert_eq!(log_unavailable(kept), None);
        let gone = LogFacts {
            read_empty: true,
            ..kept
        };
        assert!(log_unavailable(gone).unwrap().contains("missing"));
        // Read to its end: nothing more is not a missing log.
        assert_eq!(
            log_unavailable(LogFacts {
                offset: 120,
                ..gone
            }),
            None
        );
        // A run that wrote nothing has an empty log, not a missing one.
        assert_eq!(log_unavailable(LogFacts { bytes: 0, ..gone }), None);
        assert_eq!(log_unavailable(LogFacts { live: true, ..gone }), None);
        assert_eq!(
            log_unavailable(LogFacts {
                started: false,
                has_ref: false,
                bytes: 0,
                ..gone
            }),
            None
        );
        let refused = LogFacts {
            has_ref: false,
            bytes: 0,
            ..gone
        };
        assert!(log_unavailable(refused)
            .unwrap()
            .contains("before its adapter started"));
        let removed = LogFacts {
            removed: true,
            ..kept
        };
        assert!(log_unavailable(removed).unwrap().contains("retention"));
    }

    #[test]
    fn status_lines_carry_an_optional_colour_and_one_short_line() {
        let s = StatusUpdate::from_line("PAPERCLIP_STATUS: green  tests pass\n").unwrap();
        assert_eq!(s.message, "tests pass");
        assert_eq!(s.color, Some(StatusColor::Green));
        let s = StatusUpdate::from_line("PAPERCLIP_STATUS: RED build broke").unwrap();
        assert_eq!(s.color, Some(StatusColor::Red));
        let s = StatusUpdate::from_line("PAPERCLIP_STATUS: reading the spec").unwrap();
        assert_eq!((s.message.as_str(), s.color), ("reading the spec", None));
        assert_eq!(StatusUpdate::from_line("PAPERCLIP_STATUS: blue   "), None);
        assert_eq!(StatusUpdate::from_line("status: green ok"), None);
        let long = format!("PAPERCLIP_STATUS: {}", "x".repeat(500));
        let s = StatusUpdate::from_line(&long).unwrap();
        assert_eq!(s.message.chars().count(), STATUS_MESSAGE_MAX);
    }

    #[test]
    fn kinds_and_colours_read_back_and_refuse_unknown_text() {
        for t in RunEventType::ALL {
            assert_eq!(RunEventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(RunEventType::parse("lifecycle"), None);
        for c in StatusColor::ALL {
            assert_eq!(StatusColor::parse(c.as_str()), Some(c));
        }
        assert_eq!(StatusColor::parse("purple"), None);
        assert_eq!(
            serde_json::to_value(RunLogStatus::LogUnavailable).unwrap(),
            "log_unavailable"
        );
    }
}
