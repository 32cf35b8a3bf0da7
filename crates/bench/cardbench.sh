#!/bin/bash
# What the board's cards cost: a task page with and without 30 interaction
# cards, the inbox with 30 waiting, the cards' API list, and making and
# answering a card (SQLite, release build; needs wrk, jq, curl).
# Usage: crates/bench/cardbench.sh [path/to/paperclip]
set -e
BIN=${1:-target/release/paperclip}   # run from the repo root after cargo build --release
P=3395; B=http://127.0.0.1:$P
pkill -f "run --port $P" || true
rm -rf /tmp/cb-data
(nohup $BIN run --port $P --data-dir /tmp/cb-data > /tmp/cb.log 2>&1 &)
for i in $(seq 50); do curl -sf $B/api/health >/dev/null && break; sleep 0.2; done
J='-H Content-Type:application/json'
CO=$(curl -sf $J -d '{"name":"Cards Bench"}' $B/api/companies); CID=$(echo "$CO" | jq -r .id); PRE=$(echo "$CO" | jq -r .issuePrefix)
AID=$(curl -sf $J -d '{"name":"Asker","adapterType":"process","adapterConfig":{"command":"true"}}' $B/api/companies/$CID/agents | jq -r .id)
for i in $(seq 200); do curl -sf $J -d "{\"title\":\"Task $i\"}" $B/api/companies/$CID/issues >/dev/null; done
PLAIN=$(curl -sf $J -d '{"title":"No cards here"}' $B/api/companies/$CID/issues | jq -r .identifier)
CARDS=$(curl -sf $J -d "{\"title\":\"Thirty cards\",\"status\":\"todo\",\"assigneeAgentId\":\"$AID\"}" $B/api/companies/$CID/issues | jq -r .id)
for i in $(seq 50); do RUN=$(curl -sf "$B/api/companies/$CID/heartbeat-runs?agentId=$AID" | jq -r '.[0] | select(.status=="succeeded") | .id'); [ -n "$RUN" ] && break; sleep 0.2; done
KEY=$(curl -sf $J -d '{"name":"bench"}' $B/api/agents/$AID/keys | jq -r .token)
A=(-H "Authorization: Bearer $KEY" -H "X-Paperclip-Run-Id: $RUN" -H Content-Type:application/json)

# Each request's own time (curl's time_total), so the loop's process spawns do not count.
avg() { awk '{ s += $1 } END { printf "%.2f ms each (mean of %d, sequential)", s * 1000 / NR, NR }'; }
T=$(for i in $(seq 30); do curl -sf -o /dev/null -w '%{time_total}\n' "${A[@]}" -d "{\"kind\":\"request_confirmation\",\"idempotencyKey\":\"c$i\",\"payload\":{\"prompt\":\"Ship step $i?\",\"target\":{\"type\":\"custom\",\"key\":\"step$i\"}}}" $B/api/issues/$CARDS/interactions; done | avg)
echo "== create a card: $T"
T=$(for id in $(curl -sf $B/api/issues/$CARDS/interactions | jq -r '.[0:20][] | .id'); do curl -sf -o /dev/null -w '%{time_total}\n' $J -d '{}' $B/api/issues/$CARDS/interactions/$id/accept; done | avg)
echo "== accept a card (with the assignee's wake): $T"
IDENT=$(curl -sf $B/api/issues/$CARDS | jq -r .identifier)
run() { echo "== $1"; shift; wrk -t2 -c8 -d8s --latency "$@" | grep -E "Requests/sec|50%|99%"; }
run "task page, no cards" $B/$PRE/tasks/$PLAIN
run "task page, 30 cards (10 pending)" $B/$PRE/tasks/$IDENT
run "inbox page, 10 cards waiting" $B/$PRE/inbox
run "GET interactions (30)" $B/api/issues/$CARDS/interactions
pkill -f "run --port $P" || true
