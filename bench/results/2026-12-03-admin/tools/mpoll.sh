#!/bin/bash
# mpoll.sh W OUT: poll /metrics every 0.5 s (at most 80 times) once $W/port appears, beside a run of rerun.sh or run1.sh with the same W; mshow.py OUT prints the timeline.
W=$1; out=$2; : > "$out"
for i in $(seq 1 600); do [ -s "$W/port" ] && break; sleep 0.05; done
port=$(cat "$W/port")
for i in $(seq 1 80); do
  m=$(curl -s --max-time 1 "http://127.0.0.1:$port/metrics") || { sleep 0.1; continue; }
  echo "## $(date +%s.%N)" >> "$out"
  grep -E '^(thumbd_thumbnail_(rejections_total|processing_seconds_(sum|count)|queue_length|jobs_running|queue_wait_seconds_(sum|count)|source_bytes_(sum|count))|thumbd_http_requests_in_flight|process_cpu_seconds_total|go_gc_duration_seconds_count|go_memstats_heap_inuse_bytes|thumbd_http_requests_total)' <<<"$m" >> "$out"
  sleep 0.5
done
