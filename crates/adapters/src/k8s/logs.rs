//! Following a pod's log across dropped connections. The API server, a load
//! balancer or the kubelet may cut a follow stream at any time; each
//! reconnect asks for the lines since shortly before the last chunk
//! received, so nothing is lost, and the overlap is removed here.
//!
//! Lines are requested with `timestamps=true`: the server's own timestamp
//! per line is what tells a replayed line from a new one (two identical
//! lines printed at different times are both kept). A line without a
//! timestamp (a server that ignores the flag) falls back to dropping only
//! exact repeats of JSON events.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, FixedOffset};

pub const MAX_RECONNECTS: u32 = 50;
/// Replayed on a reconnect beyond the last chunk, against clock skew and
/// the server's whole-second `sinceSeconds`.
pub const OVERLAP_SECS: i64 = 5;

#[derive(Debug, Clone, Copy)]
pub struct Timings {
    pub poll: Duration,
    pub reconnect_delay: Duration,
    pub keepalive: Duration,
    pub pod_wait: Duration,
    /// How long a completion that could not be read is re-checked before the
    /// run is declared out of sync with its Job.
    pub recheck: Duration,
    /// How long a follow stream may stay open once the Job is terminal.
    pub stop_grace: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            poll: Duration::from_secs(2),
            reconnect_delay: Duration::from_secs(3),
            keepalive: Duration::from_secs(15),
            pod_wait: Duration::from_secs(120),
            recheck: Duration::from_secs(60),
            stop_grace: Duration::from_secs(3),
        }
    }
}

/// `sinceSeconds` for a reconnect: from the last chunk received, with the
/// overlap, at least 1.
pub fn since_seconds(now_unix: i64, last_chunk_unix: i64) -> i64 {
    (now_unix - last_chunk_unix + OVERLAP_SECS).max(1)
}

/// Cuts chunks into lines and drops the ones a reconnect replays.
#[derive(Default)]
pub struct LineFilter {
    partial: Vec<u8>,
    last_ts: Option<DateTime<FixedOffset>>,
    /// Lines seen with exactly `last_ts` (several lines share a timestamp).
    at_last_ts: HashSet<String>,
    /// Untimestamped JSON lines already forwarded.
    seen_json: HashSet<String>,
}

impl LineFilter {
    /// Complete, new lines of `chunk`, without their timestamps; a trailing
    /// partial line waits for the rest of it.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.partial.extend_from_slice(chunk);
        let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return Vec::new();
        };
        let rest = self.partial.split_off(end + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        String::from_utf8_lossy(&done)
            .lines()
            .filter_map(|l| self.accept(l))
            .collect()
    }

    /// The connection dropped: half a line is never forwarded (it would be
    /// half a JSON event); the replay brings it back whole.
    pub fn disconnected(&mut self) {
        self.partial.clear();
    }

    /// The stream is over for good: a last line without its newline counts.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.partial);
        let text = String::from_utf8_lossy(&rest).to_string();
        (!text.trim().is_empty())
            .then(|| self.accept(&text))
            .flatten()
    }

    fn accept(&mut self, raw: &str) -> Option<String> {
        let raw = raw.trim_end_matches('\r');
        let stamped = raw
            .split_once(' ')
            .and_then(|(ts, rest)| Some((DateTime::parse_from_rfc3339(ts).ok()?, rest)));
        match stamped {
            Some((ts, line)) => {
                match self.last_ts {
                    Some(last) if ts < last => return None,
                    Some(last) if ts == last => {
                        if !self.at_last_ts.insert(line.to_string()) {
                            return None;
                        }
                    }
                    _ => {
                        self.last_ts = Some(ts);
                        self.at_last_ts.clear();
                        self.at_last_ts.insert(line.to_string());
                    }
                }
                Some(line.to_string())
            }
            None => {
                let t = raw.trim();
                if t.starts_with('{')
                    && serde_json::from_str::<serde_json::Value>(t).is_ok()
                    && !self.seen_json.insert(t.to_string())
                {
                    return None;
                }
                Some(raw.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_lines_are_dropped_by_their_timestamp() {
        let mut f = LineFilter::default();
        let a = "2026-01-01T00:00:01.5Z {\"type\":\"a\"}\n";
        let b = "2026-01-01T00:00:02Z plain\n";
        let c = "2026-01-01T00:00:02Z plain\n";
        assert_eq!(f.push(a.as_bytes()), vec!["{\"type\":\"a\"}"]);
        assert_eq!(f.push(b.as_bytes()), vec!["plain"]);
        // the same text at the same instant is a replay; at a new one, new
        assert!(f.push(c.as_bytes()).is_empty());
        assert!(f.push(a.as_bytes()).is_empty());
        assert_eq!(
            f.push(b"2026-01-01T00:00:03.000000001Z plain\n"),
            vec!["plain"]
        );
    }

    #[test]
    fn a_partial_line_waits_and_is_dropped_on_a_disconnect() {
        let mut f = LineFilter::default();
        assert!(f.push(b"2026-01-01T00:00:01Z {\"type\":").is_empty());
        f.disconnected();
        // the replay sends it whole, once
        let whole = b"2026-01-01T00:00:01Z {\"type\":\"x\"}\n2026-01-01T00:00:02Z {\"t";
        assert_eq!(f.push(whole), vec!["{\"type\":\"x\"}"]);
        assert_eq!(f.push(b"ype\":\"y\"}\n"), vec!["{\"type\":\"y\"}"]);
        assert_eq!(f.push("2026-01-01T00:00:03Z é\n".as_bytes()), vec!["é"]);
        assert_eq!(f.finish(), None);
    }

    #[test]
    fn without_timestamps_only_json_repeats_are_dropped() {
        let mut f = LineFilter::default();
        assert_eq!(f.push(b"{\"a\":1}\nhello\n").len(), 2);
        assert_eq!(f.push(b"{\"a\":1}\nhello\n"), vec!["hello"]);
        f.push(b"tail");
        assert_eq!(f.finish().as_deref(), Some("tail"));
    }

    #[test]
    fn reconnects_replay_from_the_last_chunk() {
        assert_eq!(since_seconds(100, 90), 15);
        assert_eq!(since_seconds(100, 200), 1);
    }
}
