#!/bin/bash
# Side by side, interleaved: the build issue 40 was filed against (8832eab)
# and this one, each a fresh process per run under `bench memory`, 10 and
# 100 clients posting the same source for 5 s (THUMBD_MERGE=false: every
# request its own job), THUMBD_MEMORY_LIMIT=1 GiB, probes off. ROUNDS
# rounds (bench's output to a file first: a reader that quits early
# would kill bench with SIGPIPE before it stops its server); prints "round build mode source clients thumbnails/s answers".
set -u
cd /work/main
B=${B:-/tmp/side/bench}; S=bench/results/tmp/sources
for r in $(seq ${ROUNDS:-5}); do
  for case in "inprocess photo12 10" "inprocess photo12 100" "inprocess small 10" "inprocess small 100" "cells photo12 10" "cells photo12 100"; do
    set -- $case
    for build in old new; do
      line=$(timeout 90 $B memory -lock "" -clients $3 -duration 5s -probe 0 -source $S/$2.jpg \
        -env THUMBD_MERGE=false -env THUMBD_ENGINE=$1 -env THUMBD_MEMORY_LIMIT=1073741824 -- /tmp/side/thumbd-$build 2>/dev/null > /tmp/side/last.txt; grep -m1 'thumbnails/s' /tmp/side/last.txt)
      echo "$r $build $1 $2 $3 $(sed 's/.*clients: \([0-9.]*\) thumbnails\/s; answers: \(.*\)/\1 \2/' <<<"$line")"
    done
  done
done
