#!/usr/bin/env bash
# Sequential uploads, one at a time (the engine issue's black-box bench):
# thumbd-static variants with the source path's steps switched off, and the
# Node twin (sharp 0.35.5), every server pinned to CPU 1, curl on CPU 0;
# ROUNDS interleaved rounds of N per target, per case. Prints one line per
# request: case target seconds.
set -euo pipefail
S=/work/main/bench/results/tmp/sources
ROUNDS=${ROUNDS:-5} N=${N:-20}
VARIANTS=${VARIANTS:-main noprefault noyield nohashers nosha none}
declare -A port; pids=(); p=18400
for v in $VARIANTS; do
  p=$((p+1)); port[$v]=$p
  PORT=$p taskset -c 1 /tmp/seqab/$v >/dev/null 2>&1 & pids+=($!)
done
port[sharp]=18399
PORT=18399 taskset -c 1 node /work/main/bench/twins/node/server.mjs >/dev/null 2>&1 & pids+=($!)
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
