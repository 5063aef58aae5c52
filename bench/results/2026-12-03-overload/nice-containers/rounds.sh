#!/bin/bash
# cells at nice 5 in containers (thumbd:scratch at b949612): the container
# rows in cells mode, 3 rounds, as ../rounds.sh
cd /work/main
for r in 1 2 3; do
  ADMIN=1 CONTAINERS=1 PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe LOAD_CGROUP=/sys/fs/cgroup/cpu/thumbd-load \
    W=/tmp/ov-nicec/r$r BUDGET=1500 ONLY='^container-.*-cells-(10|500)$' \
    bench/results/2026-12-02-overload3/tools/rerun.sh > /tmp/ov-nicec/r$r.log 2>&1
done
