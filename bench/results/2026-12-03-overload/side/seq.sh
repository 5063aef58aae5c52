#!/bin/bash
# one request at a time, 12 MP photo to 256 px WebP/JPEG: a7ece2d and
# b810acd in cells mode, and the Node twin (sharp); servers on CPU 1, curl
# on CPU 0; 3 interleaved rounds of 20; prints "case target seconds".
S=/work/main/bench/results/tmp/sources
pids=()
PORT=18501 THUMBD_ENGINE=cells taskset -c 1 /tmp/side/thumbd-a7ec >/dev/null 2>&1 & pids+=($!)
PORT=18502 THUMBD_ENGINE=cells taskset -c 1 /tmp/side/thumbd-new >/dev/null 2>&1 & pids+=($!)
PORT=18503 taskset -c 1 node /work/main/bench/twins/node/server.mjs >/dev/null 2>&1 & pids+=($!)
trap 'kill ${pids[*]} 2>/dev/null' EXIT
sleep 3
declare -A port=([a7ec]=18501 [new]=18502 [sharp]=18503)
for fmt in jpeg webp; do
  q="w=256&h=256&format=$fmt"
  for t in a7ec new sharp; do for i in 1 2 3; do taskset -c 0 curl -s -o /dev/null --data-binary @$S/photo12.jpg "localhost:${port[$t]}/thumbnail?$q"; done; done
  for r in 1 2 3; do for t in a7ec new sharp; do for i in $(seq 20); do
    taskset -c 0 curl -s -o /dev/null -w "$fmt $t %{time_total}\n" --data-binary @$S/photo12.jpg "localhost:${port[$t]}/thumbnail?$q"
  done; done; done
done
