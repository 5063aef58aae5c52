#!/bin/bash
# In-process libvips at nice 5 (AFTER, default ab52019) against its parent
# (BEFORE, 873e389), side by side: the in-process rows of issue 40's
# overload table (../2026-12-03-overload/rounds.sh's settings: admin-port
# probes from a CPU cgroup of their own, the load generator in another),
# 3 rounds, the two builds interleaved (the second round in the other
# order). BEFORE and AFTER are worktrees of the two commits (each builds
# its own thumbd); the container rows (CONTAINERS=1) run IMAGE_BEFORE and
# IMAGE_AFTER, thumbd:scratch built from each.
#   flock /tmp/thumbd-heavy.lock bench/results/2026-12-03-inprocess-nice/ab.sh
OUT=${OUT:-/tmp/ov-inp}
BEFORE=${BEFORE:-/tmp/wt-before} AFTER=${AFTER:-/tmp/wt-after}
ONLY=${ONLY:-'^(process|container)-.*-inprocess-(10|500)$'}
for r in 1 2 3; do
  order="before after"; [ "$r" = 2 ] && order="after before"
  for v in $order; do
    if [ "$v" = before ]; then tree=$BEFORE img=${IMAGE_BEFORE:-thumbd:scratch-before}; else tree=$AFTER img=${IMAGE_AFTER:-thumbd:scratch-after}; fi
    mkdir -p "$OUT/$v"
    ADMIN=1 CONTAINERS=${CONTAINERS:-1} PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe LOAD_CGROUP=/sys/fs/cgroup/cpu/thumbd-load \
      W=$OUT/$v/r$r BUDGET=1500 ONLY=$ONLY IMAGE=$img \
      "$tree/bench/results/2026-12-02-overload3/tools/rerun.sh" > "$OUT/$v/r$r.log" 2>&1
  done
done
