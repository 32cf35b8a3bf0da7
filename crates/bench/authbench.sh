#!/bin/bash
# What signing in costs a request: the local board vs a session cookie vs a
# board API key on the same routes (SQLite, release build; needs wrk, jq, curl).
# Usage: crates/bench/authbench.sh [path/to/paperclip]
set -e
BIN=${1:-target/release/paperclip}   # run from the repo root after cargo build --release
pkill -f "run --port 339" || true
rm -rf /tmp/ab-local /tmp/ab-auth
(nohup $BIN run --port 3391 --data-dir /tmp/ab-local > /tmp/ab-local.log 2>&1 &)
(nohup $BIN run --port 3392 --data-dir /tmp/ab-auth --deployment-mode authenticated > /tmp/ab-auth.log 2>&1 &)
for p in 3391 3392; do for i in $(seq 50); do curl -sf localhost:$p/api/health >/dev/null && break; sleep 0.2; done; done
J='-H Content-Type:application/json'
# local
CID=$(curl -sf $J -d '{"name":"Bench"}' localhost:3391/api/companies | jq -r .id)
for i in $(seq 200); do curl -sf $J -d "{\"title\":\"Task $i\"}" localhost:3391/api/companies/$CID/issues >/dev/null; done
IID=$(curl -sf "localhost:3391/api/companies/$CID/issues?limit=1" | jq -r '.[0].id')
# authenticated
TOKEN=$(grep -o 'invite/pcp_bootstrap_[0-9a-f]*' /tmp/ab-auth.log | cut -d/ -f2)
SU=$(curl -sf -c /tmp/ab-cookies $J -d '{"name":"Ada","email":"ada@example.com","password":"correct horse battery","inviteToken":"'$TOKEN'"}' localhost:3392/api/auth/sign-up/email)
CSRF=$(echo "$SU" | jq -r .csrfToken)
COOKIE="paperclip-default.session_token=$(echo "$SU" | jq -r .token)"
curl -sf -b "$COOKIE" -H "x-paperclip-csrf: $CSRF" $J -d '{"requestType":"human"}' localhost:3392/api/invites/$TOKEN/accept >/dev/null
CID2=$(curl -sf -b "$COOKIE" -H "x-paperclip-csrf: $CSRF" $J -d '{"name":"Bench"}' localhost:3392/api/companies | jq -r .id)
for i in $(seq 200); do curl -sf -b "$COOKIE" -H "x-paperclip-csrf: $CSRF" $J -d "{\"title\":\"Task $i\"}" localhost:3392/api/companies/$CID2/issues >/dev/null; done
IID2=$(curl -sf -b "$COOKIE" "localhost:3392/api/companies/$CID2/issues?limit=1" | jq -r '.[0].id')
KEY=$(curl -sf -b "$COOKIE" -H "x-paperclip-csrf: $CSRF" $J -d '{"name":"bench"}' localhost:3392/api/board-api-keys | jq -r .token)
run() { echo "== $1"; shift; wrk -t2 -c8 -d8s --latency "$@" | grep -E "Requests/sec|50%|99%"; }
run "local board: GET issue" http://127.0.0.1:3391/api/issues/$IID
run "session cookie: GET issue" -H "Cookie: $COOKIE" http://127.0.0.1:3392/api/issues/$IID2
run "board key: GET issue" -H "Authorization: Bearer $KEY" http://127.0.0.1:3392/api/issues/$IID2
run "local board: list 50" "http://127.0.0.1:3391/api/companies/$CID/issues?limit=50"
run "session cookie: list 50" -H "Cookie: $COOKIE" "http://127.0.0.1:3392/api/companies/$CID2/issues?limit=50"
run "board key: list 50" -H "Authorization: Bearer $KEY" "http://127.0.0.1:3392/api/companies/$CID2/issues?limit=50"
S=$(date +%s%N); for i in $(seq 20); do curl -s -o /dev/null $J -d '{"email":"ada@example.com","password":"correct horse battery"}' localhost:3392/api/auth/sign-in/email; done; E=$(date +%s%N)
echo "== sign-in (argon2id verify + session): $(( (E-S)/20000000 )) ms each, 20 sequential"
pkill -f "run --port 339" || true
