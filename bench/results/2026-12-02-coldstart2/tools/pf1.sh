#!/bin/bash
# pf1.sh NAME ENV...: one 500-client process run (photo12, no merge), page faults of thumbd over 6 s of it
name=$1; shift; envs=(); for e in "$@"; do envs+=(-env "$e"); done
cd /work/main
/tmp/ovbench memory -lock "" -clients 500 -duration 5s -probe 250ms -source bench/results/tmp/sources/photo12.jpg -env THUMBD_MERGE=false "${envs[@]}" -- /tmp/ov-rerun/thumbd > /tmp/pm-$name.txt 2>&1 & bp=$!
for i in $(seq 1 100); do pid=$(pgrep -f "^/tmp/ov-rerun/thumbd$" | head -1); [ -n "$pid" ] && break; sleep 0.05; done
sleep 1.5; perf stat -e page-faults,task-clock -p $pid -o /tmp/ps-$name.txt -- sleep 6; wait $bp
echo "$name: $(grep -o '[0-9.]* thumbnails/s; answers: [0-9]* x 2xx, [0-9]* x 503' /tmp/pm-$name.txt) $(grep -o 'p99 [0-9.]* ms' /tmp/pm-$name.txt | head -1) faults $(awk '/page-faults/ {print $1}' /tmp/ps-$name.txt) cpu-ms $(awk '/task-clock/ {print $1}' /tmp/ps-$name.txt)"
