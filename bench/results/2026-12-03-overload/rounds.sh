#!/bin/bash
# 3 rounds of issue 40's overload table: processes and containers (unless
# CONTAINERS=0), both engine modes, 10 and 500 clients (THUMBD_MERGE=false),
# curl probes on the admin port from a CPU cgroup of their own (as a
# kubelet's), and for the containers the load generator in one of its own.
# ONLY (default: every 10- and 500-client step) and OUT (default
# /tmp/ov-final2; round N in OUT/rN) as the overload tool takes them.
cd "$(dirname "$0")/../../.."
OUT=${OUT:-/tmp/ov-final2}
mkdir -p "$OUT"
for r in 1 2 3; do
  ADMIN=1 CONTAINERS=${CONTAINERS:-1} PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe LOAD_CGROUP=/sys/fs/cgroup/cpu/thumbd-load \
    W=$OUT/r$r BUDGET=1500 ONLY=${ONLY:-'-(10|500)$'} \
    bench/results/2026-12-02-overload3/tools/rerun.sh > $OUT/r$r.log 2>&1
done
