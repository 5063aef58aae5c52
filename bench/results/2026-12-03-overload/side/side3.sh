#!/bin/bash
# in process, small.jpg, 10 and 100 clients: 8832eab, a7ece2d (this session's start), now; interleaved
cd /work/main
S=bench/results/tmp/sources
for r in $(seq ${ROUNDS:-5}); do
  for c in 10 100; do
  for build in old a7ec new; do
    timeout 90 /tmp/side/bench memory -lock "" -clients $c -duration 5s -probe 0 -source $S/small.jpg \
      -env THUMBD_MERGE=false -env THUMBD_ENGINE=inprocess -env THUMBD_MEMORY_LIMIT=1073741824 -- /tmp/side/thumbd-$build 2>/dev/null > /tmp/side/last.txt
    echo "$r $c $build $(grep -m1 'thumbnails/s' /tmp/side/last.txt | sed 's/.*clients: \([0-9.]*\) thumbnails\/s.*/\1/')"
  done; done
done
