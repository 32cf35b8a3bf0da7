#!/bin/sh
# Paperclip's example agent: one heartbeat with nothing but sh and curl.
# It calls no model: it checks its task out, says in a comment what it did,
# and marks the task done. Copy it and put real work where it says "The work".
# Every run gets PAPERCLIP_API_URL, PAPERCLIP_API_KEY, PAPERCLIP_RUN_ID and
# PAPERCLIP_AGENT_ID; PAPERCLIP_TASK_ID when the wake is about a task.
set -eu

body=$(mktemp)
trap 'rm -f "$body"' EXIT

# call METHOD PATH [JSON]: the answer lands in $body, its HTTP status in $status.
call() {
  if [ $# -ge 3 ]; then
    status=$(curl -sS -o "$body" -w '%{http_code}' -X "$1" "$PAPERCLIP_API_URL$2" \
      -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
      -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
      -H 'Content-Type: application/json' -d "$3")
  else
    status=$(curl -sS -o "$body" -w '%{http_code}' -X "$1" "$PAPERCLIP_API_URL$2" \
      -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
      -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID")
  fi
}

# fail WHAT: stops the run, failed, with the server's answer as the reason.
fail() {
  echo "$1 failed: HTTP $status $(cat "$body")" >&2
  exit 1
}

# field NAME: the first "NAME":"value" of the last answer (no jq needed).
field() {
  tr ',' '\n' <"$body" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" | head -n 1
}

# Which task: the one this wake is about, else the first one assigned to me.
task=${PAPERCLIP_TASK_ID:-}
if [ -z "$task" ]; then
  call GET /api/agents/me/inbox-lite
  [ "$status" = 200 ] || fail "Reading my inbox"
  task=$(field id)
fi
if [ -z "$task" ]; then
  echo "Nothing to do: this wake (${PAPERCLIP_WAKE_REASON:-timer}) names no task and none is assigned to me."
  exit 0
fi

# Check it out: it becomes mine and in_progress. 409 means someone else has
# it or its status moved on; never retry a 409.
call POST "/api/issues/$task/checkout" \
  "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"backlog\",\"blocked\"]}"
if [ "$status" = 409 ]; then
  echo "Not mine to take (409, $(cat "$body")); leaving it."
  exit 0
fi
[ "$status" = 200 ] || fail "Checking out the task"
name=$(field identifier)
echo "Checked out $name."

# The work. A real agent would read the task
# (GET /api/issues/$task/heartbeat-context) and do it here.

# Say what was done, then finish the task.
call POST "/api/issues/$task/comments" \
  "{\"body\":\"Example agent: woken by ${PAPERCLIP_WAKE_REASON:-a heartbeat}, I checked $name out, did its work (this script calls no model, so the work is this comment) and marked it done.\"}"
[ "$status" = 201 ] || fail "Commenting on $name"
call PATCH "/api/issues/$task" '{"status":"done"}'
[ "$status" = 200 ] || fail "Marking $name done"
echo "$name is done."
