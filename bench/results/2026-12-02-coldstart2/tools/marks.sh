#!/bin/bash
# marks.sh BIN N: N cold starts with marks; medians
BIN=$1; N=${2:-10}; PORTN=18190; ENVX="${3:-}"
for r in $(seq 1 $N); do
  ( T0=$(date +%s%N) PORT=$PORTN exec env $ENVX taskset -c 1 $BIN 2>/tmp/marks.err >/dev/null ) &
  for i in $(seq 1 3000); do curl -s -o /dev/null "http://127.0.0.1:$PORTN/health" && break; done
  curl -s -o /dev/null --data-binary @/work/main/service/internal/thumb/testdata/sources/small.jpg "http://127.0.0.1:$PORTN/thumbnail?w=256&h=256"
  pkill -TERM -f "^$BIN"; wait
  grep MARK /tmp/marks.err | awk '!seen[$2]++'
done | awk '{v[$2]=v[$2]" "$3; o[$2]=NR} END {for (k in v) print o[k], k, v[k]}' | sort -n | python3 -c '
import sys,statistics
for l in sys.stdin:
    f=l.split(); xs=[float(x) for x in f[2:]]
    print(f"{f[1]:12s} median {statistics.median(xs):7.2f}  min {min(xs):7.2f}  n {len(xs)}")'
