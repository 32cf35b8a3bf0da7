//! The chaos agents: `process` agents running a shell script that works its
//! task through the API like a real agent would, and their own logs.
//!
//! Each run appends to its agent's log:
//! `B <run> <task|-> <wake comment ids|-> <start ns> <pid>` when it starts,
//! `C <run> <comment id>` for every comment the API acknowledged (201), and
//! `E <run> <task|-> <wake comment ids|-> <start ns> <end ns> <pid>` when it
//! ends. A run killed mid-flight leaves a `B` line without an `E` line.

use std::collections::BTreeMap;
use std::path::Path;

/// The script of agent `name`; `peers` are names it may @mention.
pub fn script(name: &str, log: &Path, peers: &[String]) -> String {
    let log = log.display();
    let peers = peers.join(" ");
    format!(
        r#"LOG='{log}'
OUT="$LOG.$$.out"
ts() {{ date +%s%N; }}
B=$(ts)
T=${{PAPERCLIP_TASK_ID:--}}
W=${{PAPERCLIP_WAKE_COMMENT_IDS:--}}
echo "B $PAPERCLIP_RUN_ID $T $W $B $$" >> "$LOG"
api() {{
  curl -s -m 10 -o "$OUT" -w '%{{http_code}}' -X "$1" \
    -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
    -H 'Content-Type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"
}}
roll() {{ od -An -N1 -tu1 /dev/urandom | tr -d ' '; }}
# A pause now and then, so that kills and cancels land mid-run.
nap() {{
  r=$(roll)
  if [ "$r" -lt 40 ]; then sleep 1.$((r % 10)); elif [ "$r" -lt 140 ]; then sleep 0.$((r % 10)); fi
}}
comment() {{
  code=$(api POST "/api/issues/$T/comments" "{{\"body\":\"$1\"}}")
  if [ "$code" = 201 ]; then
    echo "C $PAPERCLIP_RUN_ID $(sed -n 's/^{{"id":"\([^"]*\)".*/\1/p' "$OUT")" >> "$LOG"
  fi
}}
if [ "$T" != - ]; then
  code=$(api POST "/api/issues/$T/checkout" "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"in_progress\",\"backlog\",\"blocked\"]}}")
  if [ "$code" = 200 ]; then
    nap
    set -- {peers}
    shift $(( $(roll) % $# ))
    if [ "$(roll)" -lt 64 ]; then comment "@$1 please take a look"; else comment "working on it"; fi
    nap
    api PATCH "/api/issues/$T" '{{"status":"done"}}' >/dev/null
  elif [ "$(roll)" -lt 128 ]; then
    comment "ack from {name}"
  fi
else
  nap
fi
echo "E $PAPERCLIP_RUN_ID $T $W $B $(ts) $$" >> "$LOG"
rm -f "$OUT"
"#
    )
}

/// One run as its agent's log saw it.
#[derive(Debug, Clone, Default)]
pub struct LoggedRun {
    pub task: Option<String>,
    pub comment_ids: Vec<String>,
    pub start_ns: i128,
    pub end_ns: Option<i128>,
    pub pid: u32,
    /// How many `B` lines named this run: more than one means it ran twice.
    pub starts: usize,
}

#[derive(Debug, Default)]
pub struct AgentLog {
    pub runs: BTreeMap<String, LoggedRun>,
    /// Comments the API acknowledged to a run: (run, comment id).
    pub acked_comments: Vec<(String, String)>,
    /// Lines that do not parse (a torn write would show up here).
    pub bad_lines: Vec<String>,
}

pub fn read_log(path: &Path) -> AgentLog {
    let mut log = AgentLog::default();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    for line in text.lines() {
        if !parse_line(&mut log, line) {
            log.bad_lines.push(line.to_string());
        }
    }
    log
}

fn parse_line(log: &mut AgentLog, line: &str) -> bool {
    let f: Vec<&str> = line.split(' ').collect();
    let opt = |s: &str| (s != "-").then(|| s.to_string());
    let ids = |s: &str| -> Vec<String> {
        if s == "-" {
            Vec::new()
        } else {
            s.split(',').map(str::to_string).collect()
        }
    };
    match f.as_slice() {
        ["B", run, task, comments, start, pid] => {
            let (Ok(start), Ok(pid)) = (start.parse(), pid.parse()) else {
                return false;
            };
            let entry = log.runs.entry(run.to_string()).or_default();
            entry.starts += 1;
            entry.task = opt(task);
            entry.comment_ids = ids(comments);
            entry.start_ns = start;
            entry.pid = pid;
            true
        }
        ["E", run, _task, _comments, _start, end, _pid] => {
            let Ok(end) = end.parse() else { return false };
            match log.runs.get_mut(*run) {
                Some(entry) => {
                    entry.end_ns = Some(end);
                    true
                }
                None => false,
            }
        }
        ["C", run, id] if !id.is_empty() => {
            log.acked_comments.push((run.to_string(), id.to_string()));
            true
        }
        _ => false,
    }
}
