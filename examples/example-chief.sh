#!/bin/sh
# Paperclip's example chief of staff: a chat turn with nothing but sh and curl.
# It calls no model, yet follows the same steps a model chief follows:
#   1. a message without a goal: it asks for the goal;
#   2. a goal (a message of four words or more): it writes the plan document
#      `plan` on the chat and asks the person to approve it (a plan card);
#   3. the plan approved: it creates the goal and a project, asks to hire
#      the agents the plan names (through the normal hire route, so the
#      company's approval gate applies) and suggests the first tasks (a card);
#   4. the tasks accepted: it names the tasks that were created.
# It answers in the chat at every step. Every run gets PAPERCLIP_API_URL,
# PAPERCLIP_API_KEY, PAPERCLIP_RUN_ID, PAPERCLIP_AGENT_ID, PAPERCLIP_COMPANY_ID
# and, in a chat, PAPERCLIP_TASK_ID (the chat), PAPERCLIP_WAKE_COMMENT_ID (the
# message) or PAPERCLIP_WAKE_PAYLOAD_JSON (a card's answer).
set -eu
set -f

body=$(mktemp)
trap 'rm -f "$body" "$body.agents"' EXIT
api=$PAPERCLIP_API_URL
chat=${PAPERCLIP_TASK_ID:-}
company=$PAPERCLIP_COMPANY_ID
here=$(cd "$(dirname "$0")" && pwd)

# call METHOD PATH [JSON]: the answer lands in $body, its HTTP status in $status.
call() {
  if [ $# -ge 3 ]; then
    status=$(curl -sS -o "$body" -w '%{http_code}' -X "$1" "$api$2" \
      -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
      -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
      -H 'Content-Type: application/json' -d "$3")
  else
    status=$(curl -sS -o "$body" -w '%{http_code}' -X "$1" "$api$2" \
      -H "Authorization: Bearer $PAPERCLIP_API_KEY" \
      -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID")
  fi
}

fail() {
  echo "$1 failed: HTTP $status $(cat "$body")" >&2
  exit 1
}

# text NAME: the first "NAME":"value" of the last answer, still JSON-escaped
# (so it goes back into JSON as is), commas and escaped quotes kept.
text() {
  tr '\n' ' ' <"$body" |
    sed -n "s/.*\"$1\": *\"\([^\"\\\\]*\(\\\\.[^\"\\\\]*\)*\)\".*/\1/p" |
    head -n 1
}

# first NAME: the first "NAME":"value" of the last answer, for plain values (ids).
first() {
  tr ',{}' '\n\n\n' <"$body" | sed -n "s/^ *\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -n 1
}

# says TEXT: answers in the chat (TEXT already JSON-escaped).
says() {
  call POST "/api/issues/$chat/comments" "{\"body\":\"$1\"}"
  [ "$status" = 201 ] || fail "Answering in the chat"
}

# short TEXT: at most 120 characters, never ending inside an escape.
short() {
  printf '%s' "$1" | cut -c1-120 | sed 's/\\*$//'
}

if [ -z "$chat" ]; then
  echo "Nothing to do: the example chief answers in its chat, and this wake names none."
  exit 0
fi

payload=${PAPERCLIP_WAKE_PAYLOAD_JSON:-}
card_kind=$(printf '%s' "$payload" | tr ',{}' '\n\n\n' | sed -n 's/^ *"interactionKind": *"\([^"]*\)".*/\1/p' | head -n 1)
card_status=$(printf '%s' "$payload" | tr ',{}' '\n\n\n' | sed -n 's/^ *"interactionStatus": *"\([^"]*\)".*/\1/p' | head -n 1)

# 4. The suggested tasks were accepted: name what was created.
if [ "$card_kind" = suggest_tasks ]; then
  if [ "$card_status" != accepted ]; then
    says "Understood, no tasks were created. Tell me what to change and I will suggest others."
    exit 0
  fi
  call GET "/api/issues/$chat/interactions"
  [ "$status" = 200 ] || fail "Reading the chat's cards"
  made=$(tr ',{}' '\n\n\n' <"$body" | sed -n 's/^ *"identifier": *"\([^"]*\)".*/\1/p' | tr '\n' ' ' | sed 's/ *$//; s/ /, /g')
  says "Created ${made:-no tasks}. Each agent starts on its task once its hire is approved; you can follow them on the Tasks page."
  exit 0
fi

# 3. The plan was approved (or sent back).
if [ "$card_kind" = request_confirmation ]; then
  if [ "$card_status" != accepted ]; then
    says "Understood. Tell me what to change, or write the goal again, and I will write a new plan."
    exit 0
  fi
  call GET "/api/issues/$chat/documents/plan"
  [ "$status" = 200 ] || fail "Reading the plan"
  goal=$(text title | sed 's/^Plan: //')
  call POST "/api/companies/$company/goals" \
    "{\"title\":\"$goal\",\"level\":\"company\",\"status\":\"active\",\"ownerAgentId\":\"$PAPERCLIP_AGENT_ID\"}"
  [ "$status" = 201 ] || fail "Creating the goal"
  goal_id=$(first id)
  call POST "/api/companies/$company/projects" \
    "{\"name\":\"Kickoff\",\"description\":\"The first steps toward: $goal\",\"goalIds\":[\"$goal_id\"],\"leadAgentId\":\"$PAPERCLIP_AGENT_ID\"}"
  [ "$status" = 201 ] || fail "Creating the project"
  project_id=$(first id)
  # An agent the company already has is not hired twice.
  call GET "/api/companies/$company/agents"
  [ "$status" = 200 ] || fail "Reading the agents"
  cp "$body" "$body.agents"
  existing() {
    tr -d '\n' <"$body.agents" | grep -o "\"id\":\"[^\"]*\"[^{}]*\"name\":\"$1\"" |
      sed -n 's/^"id":"\([^"]*\)".*/\1/p' | head -n 1
  }
  # The hires run the bundled example agent, so they work without a model too.
  hire() {
    id=$(existing "$1")
    if [ -n "$id" ]; then
      printf '{"agent":{"id":"%s"}}' "$id" >"$body"
      status=201
      return
    fi
    call POST "/api/companies/$company/agent-hires" \
      "{\"name\":\"$1\",\"role\":\"$2\",\"title\":\"$3\",\"reportsTo\":\"$PAPERCLIP_AGENT_ID\",\"capabilities\":\"$4\",\"adapterType\":\"process\",\"adapterConfig\":{\"command\":\"sh\",\"args\":[\"$here/example-agent.sh\"],\"timeoutSec\":120,\"graceSec\":5}}"
  }
  hire Researcher researcher Researcher "Finds out what the goal needs."
  [ "$status" = 201 ] || fail "Asking to hire the Researcher"
  researcher=$(first id)
  hire Builder engineer Builder "Builds the first version."
  [ "$status" = 201 ] || fail "Asking to hire the Builder"
  builder=$(first id)
  task() {
    printf '{"clientKey":"%s","title":"%s","description":"%s","priority":"%s","assigneeAgentId":"%s","projectId":"%s","goalId":"%s"}' \
      "$1" "$2" "$3" "$4" "$5" "$project_id" "$goal_id"
  }
  tasks="$(task research "Find out what the goal needs" "What must be true to reach: $goal" high "$researcher"),$(task build "Build the first version" "A first, small version toward: $goal" medium "$builder"),$(task review "Review progress toward the goal" "Where we are on: $goal" low "$PAPERCLIP_AGENT_ID")"
  call POST "/api/issues/$chat/interactions" \
    "{\"kind\":\"suggest_tasks\",\"idempotencyKey\":\"chief-tasks:$goal_id\",\"continuationPolicy\":\"wake_assignee_on_accept\",\"title\":\"First tasks\",\"payload\":{\"version\":1,\"tasks\":[$tasks]}}"
  [ "$status" = 201 ] || fail "Suggesting the first tasks"
  says "The plan is approved. I created the goal and the project Kickoff, and asked to hire Researcher and Builder: their hires wait for approval on the Approvals page when the company requires it. Accept the first tasks below to create them."
  exit 0
fi

# 1. and 2. A message from the person.
message=""
if [ -n "${PAPERCLIP_WAKE_COMMENT_ID:-}" ]; then
  call GET "/api/issues/$chat/comments/$PAPERCLIP_WAKE_COMMENT_ID"
  [ "$status" = 200 ] || fail "Reading the message"
  message=$(text body | sed 's/\\[nrt]/ /g')
fi
# shellcheck disable=SC2086
set -- $message
if [ $# -lt 4 ]; then
  says "Hello! I am your chief of staff. What is the goal you want this company to reach? Tell me in a sentence, and I will propose a plan: a goal, a project, the agents to hire and the first tasks."
  exit 0
fi
goal=$(short "$message")
plan="**Goal:** $goal\n\n**Project:** Kickoff, the first steps toward the goal.\n\n**Agents to hire:**\n- Researcher: finds out what the goal needs.\n- Builder: builds the first version.\n\n**First tasks:**\n1. Find out what the goal needs (Researcher).\n2. Build the first version (Builder).\n3. Review progress toward the goal (me).\n\nApprove the plan and I will create the goal and the project, ask to hire the agents and suggest these tasks."
call PUT "/api/issues/$chat/documents/plan" \
  "{\"title\":\"Plan: $goal\",\"format\":\"markdown\",\"body\":\"$plan\",\"changeSummary\":\"Plan for the goal\"}"
case "$status" in 200|201) ;; *) fail "Writing the plan" ;; esac
revision=$(first latestRevisionId)
[ -n "$revision" ] || revision=$(first revisionId)
call POST "/api/issues/$chat/interactions" \
  "{\"kind\":\"request_confirmation\",\"idempotencyKey\":\"chief-plan:$revision\",\"continuationPolicy\":\"wake_assignee\",\"title\":\"Approve the plan\",\"payload\":{\"version\":1,\"prompt\":\"Approve this plan?\",\"detailsMarkdown\":\"$plan\",\"acceptLabel\":\"Approve plan\",\"rejectLabel\":\"Request changes\",\"target\":{\"type\":\"issue_document\",\"issueId\":\"$chat\",\"key\":\"plan\",\"revisionId\":\"$revision\",\"label\":\"Plan\"}}}"
[ "$status" = 201 ] || fail "Asking to approve the plan"
says "Here is my plan for: $goal. It names a goal, a project, two agents to hire and three first tasks. Approve it below, or tell me what to change."
