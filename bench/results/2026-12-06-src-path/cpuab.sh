#!/usr/bin/env bash
# CPU time (utime+stime, /proc/PID/stat) per request of each server over
# N sequential requests, ROUNDS interleaved rounds, order alternating.
set -euo pipefail
D=${D:-/tmp/seq47}; ROUNDS=${ROUNDS:-6}; N=${N:-200}; SRC=${SRC:-small.jpg}
declare -A port=([base]=18511 [main]=18512) pid
for v in base main; do
  PORT=${port[$v]} THUMBD_SOURCE_DIR=$D/sources THUMBD_CACHE_SIZE=0 THUMBD_MAX_BODY_BYTES=64000000 taskset -c 1 "$D/${v:0:1}/thumbd-static" >/dev/null 2>&1 & pid[$v]=$!
done
trap 'kill ${pid[*]} 2>/dev/null' EXIT
sleep 2
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
q="src=$SRC&w=256&h=256&format=webp"
for v in base main; do for i in $(seq 20); do curl -sf -o /dev/null "localhost:${port[$v]}/thumbnail?$q"; done; done
for r in $(seq $ROUNDS); do
  order="base main"; [ $((r % 2)) = 0 ] && order="main base"
  for v in $order; do
    a=$(ticks ${pid[$v]})
    for i in $(seq $N); do taskset -c 0 curl -sf -o /dev/null "localhost:${port[$v]}/thumbnail?$q"; done
    b=$(ticks ${pid[$v]})
    echo "$SRC $v $r $(awk -v t=$((b-a)) -v n=$N 'BEGIN{printf "%.3f", t*10/n}')"
  done
done
