#!/bin/bash
# marks2.sh BIN N ENV: per-run durations startup (startup-end - startup-begin) and start->health
BIN=$1; N=${2:-10}; ENVX="${3:-X=1}"; PORTN=18191
for r in $(seq 1 $N); do
  ( T0=$(date +%s%N) PORT=$PORTN exec env $ENVX taskset -c 1 $BIN 2>/tmp/marks2.err >/dev/null ) &
  for i in $(seq 1 3000); do curl -s -o /dev/null "http://127.0.0.1:$PORTN/ready" && break; sleep 0.002; done
  curl -s -o /dev/null --data-binary @/work/main/service/internal/thumb/testdata/sources/small.jpg "http://127.0.0.1:$PORTN/thumbnail?w=256&h=256"
  pkill -TERM -f "^$BIN"; wait
  awk '/MARK/ && !seen[$2]++ {t[$2]=$3} END {printf "%.2f %.2f %.2f\n", t["startup-end"]-t["startup-begin"], t["harden-end"]-t["startup-end"], t["job-end"]-t["job-begin"]}' /tmp/marks2.err
done | python3 -c '
import sys,statistics
rows=[list(map(float,l.split())) for l in sys.stdin]
for i,n in enumerate(["startup","harden","job"]):
    xs=[r[i] for r in rows]; print(f"{n:8s} median {statistics.median(xs):6.2f} min {min(xs):6.2f} max {max(xs):6.2f}")'
