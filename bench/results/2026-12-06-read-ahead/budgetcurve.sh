#!/usr/bin/env bash
set -euo pipefail
S=/tmp/peer47; P="/insecure/rs:fill:256:256/f:webp/plain/local:///${SRC:-photo12.tif}"
common=(THUMBD_SOURCE=$S THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn)
pids=(); port=19000
for b in $BUDGETS; do port=$((port+1)); env "${common[@]}" PORT=$port THUMBD_SOURCE_BUDGET=$b taskset -c 1 /tmp/seq47/m/thumbd-static >/dev/null 2>&1 & pids+=($!); done
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 3
for r in 1 2; do port=19000; for b in $BUDGETS; do port=$((port+1))
  out=$(taskset -c 0 /tmp/hey -z 8s -c 10 "http://127.0.0.1:$port$P")
  echo "$r budget=$b $(echo "$out" | awk '/Requests\/sec/ {print $2}') rss=$(awk '/VmHWM/ {print $2}' /proc/${pids[$(( port-19001 ))]}/status)kB"
done; done
