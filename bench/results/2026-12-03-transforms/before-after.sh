#!/usr/bin/env bash
# Before/after the transforms (and this session's other merges): sequential
# POST /thumbnail?w=256&h=256&format=webp of the 1920x1280 and the 12 MP
# JPEG, the 01:34 build (before the transforms) against this commit's,
# 5 interleaved rounds of 20 per source and build.
set -euo pipefail
start() { PORT=$2 taskset -c 1 $1 >/dev/null 2>&1 & echo $!; }
A=$(start /tmp/thumbd-static-oldrecipe 18281); B=$(start /tmp/ab-main/thumbd-static 18282)
sleep 1
for src in large photo12; do
  f=/work/main/bench/results/tmp/sources/$src.jpg
  for port in 18281 18282; do for i in 1 2 3; do curl -s -o /dev/null --data-binary @$f "localhost:$port/thumbnail?w=256&h=256&format=webp"; done; done
  for round in 1 2 3 4 5; do for port in 18281 18282; do
    for i in $(seq 20); do curl -s -o /dev/null -w "$src $port %{time_total}\n" --data-binary @$f "localhost:$port/thumbnail?w=256&h=256&format=webp"; done
  done; done
done
kill $A $B
