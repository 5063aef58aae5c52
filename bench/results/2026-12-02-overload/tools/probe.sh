#!/bin/bash
# probe.sh OUT N INTERVAL: wait for /tmp/ov/port, then N probes alternating /health and /ready
out=$1; n=${2:-100}; iv=${3:-0.1}
for i in $(seq 1 300); do [ -s /tmp/ov/port ] && curl -s -o /dev/null --max-time 1 http://127.0.0.1:$(cat /tmp/ov/port)/ready && break; sleep 0.1; done; sleep 1.5
port=$(cat /tmp/ov/port)
: > "$out"
for i in $(seq 1 "$n"); do
  p=/health; [ $((i%2)) = 0 ] && p=/ready
  curl -s -o /dev/null --max-time 1 -w "$p %{time_connect} %{time_starttransfer} %{time_total} %{http_code}\n" "http://127.0.0.1:$port$p" >> "$out"
  sleep "$iv"
done
curl -s --max-time 2 "http://127.0.0.1:$port/metrics" | grep -E "^thumbd_thumbnail_rejections_total|^thumbd_http_requests_total.*thumbnail" > "$out.metrics"
