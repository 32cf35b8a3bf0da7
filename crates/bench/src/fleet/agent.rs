//! The fleet's agents: `process` agents whose shell script works its task
//! through the API (check out, work 1-4 s, comment, sometimes @mention a
//! peer, done)
//! and makes one model request per run to the bench's scripted provider,
//! saying whether the run had anything to do.
//!
//! The log is the chaos agents' format (`chaos::agents::read_log` reads
//! it, and the chaos invariants check it): `B <run> <task|-> <wake comment
//! ids|-> <start ns> <pid>` at the start, `C <run> <comment id>` per
//! acknowledged comment, `E ...` at the end; a killed run has no `E` line.
//! The model request's text is `fleet run=<run> task=<task|-> wake=<ids|->
//! open=<0|1>`: `open=0` with no task and no comment is a wake with
//! nothing to do.

use std::path::Path;

pub fn script(log: &Path, provider: &str, peers: &[String]) -> String {
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
  curl -s -m 20 -o "$OUT" -w '%{{http_code}}' -X "$1" \
    -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
    -H 'Content-Type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"
}}
roll() {{ od -An -N1 -tu1 /dev/urandom | tr -d ' '; }}
nap() {{ r=$(roll); if [ "$r" -lt 60 ]; then sleep 0.$((r % 10)); fi; }}
comment() {{
  code=$(api POST "/api/issues/$T/comments" "{{\"body\":\"$1\"}}")
  if [ "$code" = 201 ]; then
    echo "C $PAPERCLIP_RUN_ID $(sed -n 's/^{{"id":"\([^"]*\)".*/\1/p' "$OUT")" >> "$LOG"
  fi
}}
OPEN=1
if [ "$T" = - ] && [ "$W" = - ]; then
  code=$(curl -s -m 20 -o "$OUT" -w '%{{http_code}}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
    -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" "$PAPERCLIP_API_URL/api/agents/me/inbox-lite")
  if [ "$code" = 200 ] && [ "$(cat "$OUT")" = "[]" ]; then OPEN=0; fi
  echo "$PAPERCLIP_RUN_ID $code $(head -c 400 "$OUT")" >> "$LOG.inbox"
fi
curl -s -m 20 -o /dev/null -X POST '{provider}/v1/messages' -H 'content-type: application/json' \
  -d "{{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":16,\"messages\":[{{\"role\":\"user\",\"content\":\"fleet run=$PAPERCLIP_RUN_ID task=$T wake=$W open=$OPEN\"}}]}}"
if [ "$T" != - ]; then
  code=$(api POST "/api/issues/$T/checkout" "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"in_progress\",\"backlog\",\"blocked\"]}}")
  if [ "$code" = 200 ]; then
    # The work itself: a few seconds, so that kills land mid-run.
    sleep $(( 1 + $(roll) % 4 ))
    set -- {peers}
    shift $(( $(roll) % $# ))
    if [ "$(roll)" -lt 40 ]; then comment "@$1 please take a look"; else comment "working on it"; fi
    nap
    api PATCH "/api/issues/$T" '{{"status":"done"}}' >/dev/null
  elif [ "$(roll)" -lt 128 ]; then
    comment "ack"
  fi
fi
echo "E $PAPERCLIP_RUN_ID $T $W $B $(ts) $$" >> "$LOG"
rm -f "$OUT"
"#
    )
}

/// What a model request said about its run: (run, had nothing to do).
pub fn idle_request(text: &str) -> Option<(String, bool)> {
    let rest = text.strip_prefix("fleet ")?;
    let field = |name: &str| {
        rest.split(' ')
            .find_map(|kv| kv.strip_prefix(name).map(str::to_string))
    };
    let run = field("run=")?;
    let idle = field("task=").as_deref() == Some("-")
        && field("wake=").as_deref() == Some("-")
        && field("open=").as_deref() == Some("0");
    Some((run, idle))
}

#[cfg(test)]
mod tests {
    use super::idle_request;

    #[test]
    fn a_request_with_no_task_no_comment_and_an_empty_inbox_is_idle() {
        assert_eq!(
            idle_request("fleet run=r1 task=- wake=- open=0"),
            Some(("r1".into(), true))
        );
        assert_eq!(
            idle_request("fleet run=r2 task=- wake=- open=1"),
            Some(("r2".into(), false))
        );
        assert_eq!(
            idle_request("fleet run=r3 task=t9 wake=- open=1"),
            Some(("r3".into(), false))
        );
        assert_eq!(idle_request("heartbeat"), None);
    }
}
