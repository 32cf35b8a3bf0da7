//! What a run leaves for the next one in the engine's state directory: how
//! its session's last turn ended, so a run whose agent cannot load that
//! session again starts fresh told how the last one ended.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::session::Report;
use crate::config::truncate;

fn file(state_dir: &Path, session: &str) -> PathBuf {
    let safe: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    state_dir.join("sessions").join(format!("{safe}.json"))
}

/// Records the end of `session`'s turn; the error is a run-log line.
pub(crate) fn remember(state_dir: &Path, session: &str, report: &Report) -> Result<(), String> {
    let file = file(state_dir, session);
    let record = json!({
        "sessionId": session,
        "stopReason": report.stop_reason,
        "lastMessage": report.text.as_deref().map(|t| truncate(t, 2000)),
        "at": chrono::Utc::now().to_rfc3339(),
    });
    file.parent()
        .map(std::fs::create_dir_all)
        .unwrap_or(Ok(()))
        .and_then(|_| std::fs::write(&file, record.to_string()))
        .map_err(|e| {
            format!(
                "could not record the session's outcome in {}: {e}",
                file.display()
            )
        })
}

/// The note that opens a fresh session's prompt in place of `session`.
pub(crate) fn summary_of(state_dir: &Path, session: &str) -> String {
    let record: Option<Value> = std::fs::read_to_string(file(state_dir, session))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut note = String::from(
        "Note from Paperclip: your previous session on this task could not be resumed, so this is a fresh session.",
    );
    match record {
        Some(r) => {
            if let Some(stop) = r["stopReason"].as_str() {
                note.push_str(&format!(
                    " The previous run ended with stop reason `{stop}`"
                ));
                if let Some(at) = r["at"].as_str() {
                    note.push_str(&format!(" at {at}"));
                }
                note.push('.');
            }
            if let Some(last) = r["lastMessage"].as_str() {
                note.push_str("\nIts last message was:\n> ");
                note.push_str(&last.replace('\n', "\n> "));
            }
        }
        None => note.push_str(" No record of how the previous run ended was kept."),
    }
    note.push_str("\nCheck the task's current state and comments before acting again.");
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_session_is_told_how_the_last_one_ended() {
        let dir = std::env::temp_dir().join(format!("acp-memory-{}", std::process::id()));
        let report = Report {
            stop_reason: Some("end_turn".into()),
            text: Some("Marked ACM-1 done.\nNothing left.".into()),
            ..Report::default()
        };
        remember(&dir, "sess/1:a", &report).unwrap();
        let note = summary_of(&dir, "sess/1:a");
        assert!(note.contains("could not be resumed"), "{note}");
        assert!(note.contains("stop reason `end_turn`"), "{note}");
        assert!(
            note.contains("> Marked ACM-1 done.\n> Nothing left."),
            "{note}"
        );
        // The id cannot climb out of the state directory.
        assert!(dir.join("sessions/sess_1_a.json").is_file());
        assert!(summary_of(&dir, "other").contains("No record"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
