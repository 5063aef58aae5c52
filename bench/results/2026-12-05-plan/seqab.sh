#!/usr/bin/env bash
# Issue 46's "nothing gets slower": the engine bench's 9 cases as sequential
# uploads, one request at a time (bench/results/2026-12-03-sequential's
# seqab.sh): thumbd-static built before the plan (5819aa9^1, "base") and at
# this commit ("main"), and the Node twin (sharp), every server pinned to
# CPU 1, curl on CPU 0; ROUNDS interleaved rounds of N per target, per case,
# after 3 unmeasured requests each. Prints one line per request:
# case target seconds.
#   D=/tmp/seq46: $D/base and $D/main (scripts/build.sh static slim, each
#   tree), $D/sources (go run ./bench sources $D/sources photo12 large small)
set -euo pipefail
D=${D:-/tmp/seq46} S=${D}/sources
ROUNDS=${ROUNDS:-5} N=${N:-20}
VARIANTS=${VARIANTS:-base main}
declare -A port; pids=(); p=18400
for v in $VARIANTS; do
  p=$((p+1)); port[$v]=$p
  PORT=$p taskset -c 1 "$D/$v" >/dev/null 2>&1 & pids+=($!)
done
port[sharp]=18399
PORT=18399 taskset -c 1 node "$(dirname "$0")/../../twins/node/server.mjs" >/dev/null 2>&1 & pids+=($!)
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 2
targets="$VARIANTS sharp"
for src in photo12 large small; do for fmt in jpeg webp png; do
  case=$src/$fmt; q="w=256&h=256&format=$fmt"
  for t in $targets; do for i in 1 2 3; do taskset -c 0 curl -s -o /dev/null --data-binary @$S/$src.jpg "localhost:${port[$t]}/thumbnail?$q"; done; done
  for r in $(seq $ROUNDS); do for t in $targets; do
    for i in $(seq $N); do taskset -c 0 curl -s -o /dev/null -w "$case $t %{time_total}\n" --data-binary @$S/$src.jpg "localhost:${port[$t]}/thumbnail?$q"; done
  done; done
done; done
