#!/usr/bin/env bash
# Issue 47's "nothing gets slower" for images read by src=: GET
# /thumbnail?src=NAME one request at a time, thumbd-static before the range
# reads (da8bd87, "base": the file read whole) and at HEAD ("main": a 4 KiB
# ReadAt and a sniff, then the rest), each server pinned to CPU 1, curl on
# CPU 0, result cache off; ROUNDS interleaved rounds of N per target per
# case, after 3 unmeasured requests each. Prints: case target seconds.
# CASES picks the sources; ALTERNATE=1 swaps the targets' order every
# other round (srcab2.out: CASES="small.jpg large.jpg" ROUNDS=6 N=40
# ALTERNATE=1).
set -euo pipefail
D=${D:-/tmp/seq47}
ROUNDS=${ROUNDS:-5} N=${N:-20}
declare -A port=([base]=18501 [main]=18502)
pids=()
for v in base main; do
  bin=$D/${v:0:1}/thumbd-static
  PORT=${port[$v]} THUMBD_SOURCE_DIR=$D/sources THUMBD_CACHE_SIZE=0 THUMBD_MAX_BODY_BYTES=64000000 taskset -c 1 "$bin" >/dev/null 2>&1 & pids+=($!)
done
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 2
for src in ${CASES:-small.jpg large.jpg photo12.jpg photo12.png photo12.tif}; do
  q="src=$src&w=256&h=256&format=webp"
  for t in base main; do for i in 1 2 3; do taskset -c 0 curl -sf -o /dev/null "localhost:${port[$t]}/thumbnail?$q"; done; done
  for r in $(seq $ROUNDS); do
    order="base main"; [ "${ALTERNATE:-0}" = 1 ] && [ $((r % 2)) = 0 ] && order="main base"
    for t in $order; do
    for i in $(seq $N); do taskset -c 0 curl -sf -o /dev/null -w "$src $t %{time_total}\n" "localhost:${port[$t]}/thumbnail?$q"; done
  done; done
done
