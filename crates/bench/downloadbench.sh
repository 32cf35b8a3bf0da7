#!/bin/bash
# What downloading attachments costs the server's memory: one 40 MB file,
# 3 rounds of 16 concurrent downloads (each client reading at 20 MB/s),
# and the server's peak RSS (VmHWM, reset after the upload) over them.
# Usage: crates/bench/downloadbench.sh [path/to/paperclip] [label]
set -e
BIN=${1:-target/release/paperclip}; LABEL=${2:-paperclip}
D=$(mktemp -d); P=$((40000 + RANDOM % 2000)); B=http://127.0.0.1:$P
$BIN run --port $P --data-dir $D --attachment-max-bytes 50000000 > $D/log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf $D' EXIT
for i in $(seq 100); do curl -sf $B/api/health >/dev/null && break; sleep 0.1; done
J='-H content-type:application/json'
CID=$(curl -sf $J -d '{"name":"Download Bench"}' $B/api/companies | jq -r .id)
IID=$(curl -sf $J -d '{"title":"big"}' $B/api/companies/$CID/issues | jq -r .id)
head -c 40000000 /dev/zero | tr '\0' 'a' > $D/big.txt
AID=$(curl -sf -H "Origin: $B" -F "file=@$D/big.txt;type=text/plain" \
  $B/api/companies/$CID/issues/$IID/attachments | jq -r .id)
before=$(awk '/VmRSS/ {print $2}' /proc/$PID/status)
echo 5 > /proc/$PID/clear_refs   # the peak from here on, not the upload's
for round in 1 2 3; do
  pids=()
  for i in $(seq 16); do
    curl -s -o /dev/null -w '%{size_download}\n' --limit-rate 20M \
      $B/api/attachments/$AID/content >> $D/sizes &
    pids+=($!)
  done
  wait "${pids[@]}"
done
echo "downloads (count, bytes each):"; sort $D/sizes | uniq -c
echo "$LABEL: RSS $before kB before; peak $(awk '/VmHWM/ {print $2}' /proc/$PID/status) kB during the downloads"
