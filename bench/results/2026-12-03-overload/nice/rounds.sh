#!/bin/bash
# cells at nice 5: the process rows in cells mode, 3 rounds, as ov-final2
cd /work/main
for r in 1 2 3; do
  ADMIN=1 PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe W=/tmp/ov-nice/r$r BUDGET=1500 ONLY='^process-.*-cells-(10|500)$' \
    bench/results/2026-12-02-overload3/tools/rerun.sh > /tmp/ov-nice/r$r.log 2>&1
done
