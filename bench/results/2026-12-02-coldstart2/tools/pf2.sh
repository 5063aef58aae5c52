#!/bin/bash
# pf2.sh NAME BIN CLIENTS ENV...: one process run (photo12, no merge), thumbd's page faults and CPU over 6 s of it
name=$1 bin=$2 clients=$3; shift 3; envs=(); for e in "$@"; do envs+=(-env "$e"); done
cd /work/main
/tmp/ovbench memory -lock "" -clients $clients -duration 5s -probe 250ms -source bench/results/tmp/sources/photo12.jpg -env THUMBD_MERGE=false "${envs[@]}" -- $bin > /tmp/pm-$name.txt 2>&1 & bp=$!
for i in $(seq 1 100); do pid=$(pgrep -f "^$bin$" | head -1); [ -n "$pid" ] && break; sleep 0.05; done
sleep 1.5; perf stat -e page-faults,task-clock -p $pid -o /tmp/ps-$name.txt -- sleep 6; wait $bp
echo "$name: $(grep -o '[0-9.]* thumbnails/s; answers: .*' /tmp/pm-$name.txt | cut -c1-60) $(grep -o 'p99 [0-9.]* ms' /tmp/pm-$name.txt | head -1) faults $(awk '/page-faults/ {print $1}' /tmp/ps-$name.txt) cpu-ms $(awk '/task-clock/ {print $1}' /tmp/ps-$name.txt)"
