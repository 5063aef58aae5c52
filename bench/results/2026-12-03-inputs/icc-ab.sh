#!/usr/bin/env bash
# Sequential uploads of JPEGs carrying an sRGB ICC profile (as cameras
# write them), 256x256 WebP: the build before this session (no ICC step),
# this session's (the thumbnail converted through its profile), and the
# Node twin (sharp 0.35.5), 5 interleaved rounds of 20.
set -euo pipefail
start() { PORT=$2 taskset -c 1 $1 >/dev/null 2>&1 & echo $!; }
A=$(start /tmp/thumbd-static-oldrecipe 18381); B=$(start ${NEW:-/tmp/ab-main/thumbd-static} 18382)
PORT=18383 taskset -c 1 node /work/main/bench/twins/node/server.mjs >/dev/null 2>&1 & C=$!
sleep 2
for src in large-icc photo12-icc; do
  f=/tmp/$src.jpg
  for port in 18381 18382 18383; do for i in 1 2 3; do curl -s -o /dev/null --data-binary @$f "localhost:$port/thumbnail?w=256&h=256&format=webp"; done; done
  for round in 1 2 3 4 5; do for port in 18381 18382 18383; do
    for i in $(seq 20); do curl -s -o /dev/null -w "$src $port %{time_total}\n" --data-binary @$f "localhost:$port/thumbnail?w=256&h=256&format=webp"; done
  done; done
done
kill $A $B $C
