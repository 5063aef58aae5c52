#!/bin/bash
# pfstat.sh NAME BIN CLIENTS ENV...: one thumbd process under `bench memory`
# (CLIENTS clients POSTing the 12 MP photo, THUMBD_MERGE=false, 5 s); its
# page faults and CPU time over 6 s of the run (perf stat -p), one line.
# Needs $B (a `bench` binary, default /tmp/ov/bench) and the bench's sources
# (bench sources bench/results/tmp/sources); run from the repository's root.
name=$1 bin=$2 clients=$3; shift 3; envs=(); for e in "$@"; do envs+=(-env "$e"); done
B=${B:-/tmp/ov/bench}; O=${O:-/tmp/ov}
"$B" memory -lock "" -clients "$clients" -duration 5s -probe 250ms -source bench/results/tmp/sources/photo12.jpg -env THUMBD_MERGE=false "${envs[@]}" -- "$bin" >"$O/pm-$name.txt" 2>&1 &
bp=$!
for i in $(seq 1 100); do pid=$(pgrep -f "^$bin$" | head -1); [ -n "$pid" ] && break; sleep 0.05; done
sleep 1.5
perf stat -e page-faults,task-clock -p "$pid" -o "$O/ps-$name.txt" -- sleep 6
wait $bp
echo "$name: $(grep -o '[0-9.]* thumbnails/s; answers: .*' "$O/pm-$name.txt" | cut -c1-60) $(grep -o 'p99 [0-9.]* ms' "$O/pm-$name.txt" | head -1) faults $(awk '/page-faults/ {print $1}' "$O/ps-$name.txt") cpu-ms $(awk '/task-clock/ {print $1}' "$O/ps-$name.txt")"
