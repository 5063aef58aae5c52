#!/bin/bash
# 3 rounds of issue 40's overload table at 159b15d: processes and
# containers, both engine modes, 10 and 500 clients (THUMBD_MERGE=false),
# curl probes on the admin port from a CPU cgroup of their own (as a
# kubelet's), and for the containers the load generator in one of its own.
cd /work/main
for r in 1 2 3; do
  ADMIN=1 CONTAINERS=1 PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe LOAD_CGROUP=/sys/fs/cgroup/cpu/thumbd-load \
    W=/tmp/ov-final2/r$r BUDGET=1500 ONLY='-(10|500)$' \
    bench/results/2026-12-02-overload3/tools/rerun.sh > /tmp/ov-final2/r$r.log 2>&1
done
