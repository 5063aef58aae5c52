#!/usr/bin/env bash
# prof3.sh NAME PORT BUDGET: perf of thumbd (dbg) under 10 clients, TIFF
set -euo pipefail
name=$1 port=$2 budget=$3; S=/tmp/peer47
P="/insecure/rs:fill:256:256/f:webp/plain/local:///photo12.tif"
env THUMBD_SOURCE=$S THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn PORT=$port THUMBD_SOURCE_BUDGET=$budget taskset -c 1 /work/tmp/dbg/thumbd-static >/dev/null 2>&1 &
pid=$!
sleep 3
taskset -c 0 /tmp/hey -z 3s -c 10 "http://127.0.0.1:$port$P" >/dev/null
perf record -q -F 1999 -g -o /tmp/p3-$name.perf -p $pid -- sleep 8 >/dev/null 2>&1 &
rec=$!
taskset -c 0 /tmp/hey -z 8s -c 10 "http://127.0.0.1:$port$P" | grep -E "Requests/sec|\[200\]"
wait $rec || true
grep -E 'VmHWM|VmRSS' /proc/$pid/status
kill $pid; wait $pid 2>/dev/null || true
