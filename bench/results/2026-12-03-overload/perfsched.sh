#!/bin/bash
# one process-1g-cells-500 run with perf sched recording the whole machine
# from 4 s in (after start-up) for 8 s: per-task wakeup-to-run latency.
cd /work/main
T=bench/results/2026-12-02-overload3/tools
W=/tmp/ov-perf; mkdir -p $W
( sleep 4; perf sched record -a -o $W/perf.data -- sleep 8 >/dev/null 2>&1 ) &
ADMIN=1 PROBE_CGROUP=/sys/fs/cgroup/cpu/thumbd-probe W=$W BUDGET=600 ONLY='^process-1g-cells-500$' $T/rerun.sh > $W/log 2>&1
wait
perf sched latency -i $W/perf.data --sort max 2>/dev/null | head -30 > $W/latency.txt
