#!/bin/bash
# run1.sh NAME BIN CLIENTS DURATION [env...]; RENICE=N renices libvips threads
name=$1 bin=$2 clients=$3 dur=$4; shift 4
envs=(); for e in "$@"; do envs+=(-env "$e"); done
rm -f /tmp/ov/port /tmp/ov/pid
/tmp/ov/probe.sh /tmp/ov/probe-$name-$clients.txt 30 0.1 &
pp=$!
if [ -n "$RENICE" ]; then
 ( for i in $(seq 1 100); do [ -s /tmp/ov/pid ] && break; sleep 0.1; done; p=$(cat /tmp/ov/pid)
   for i in $(seq 1 100); do for t in /proc/$p/task/*; do grep -q '^libvips' $t/comm 2>/dev/null && renice -n $RENICE -p $(basename $t) >/dev/null 2>&1; done; sleep 0.2; done ) &
 rp=$!
fi
( for i in $(seq 1 300); do [ -s /tmp/ov/port ] && curl -s -o /dev/null --max-time 1 http://127.0.0.1:$(cat /tmp/ov/port)/ready && break; sleep 0.1; done; sleep 2; p=$(cat /tmp/ov/pid); /tmp/ov/ss.sh $p > /tmp/ov/ss0-$name; sleep 3; /tmp/ov/ss.sh $p > /tmp/ov/ss1-$name ) &
sp=$!
/tmp/ov/bench memory -lock "" -clients $clients -duration $dur -probe 250ms -source bench/results/tmp/sources/photo12.jpg "${envs[@]}" -- sh -c "echo \$\$ > /tmp/ov/pid; echo \$PORT > /tmp/ov/port; exec $bin" 2>/tmp/ov/stderr-$name-$clients.txt
wait $pp; wait $sp
[ -n "$rp" ] && kill $rp 2>/dev/null
/tmp/ov/pstat.sh /tmp/ov/probe-$name-$clients.txt; python3 /tmp/ov/ssdiff.py /tmp/ov/ss0-$name /tmp/ov/ss1-$name; grep DIAG /tmp/ov/stderr-$name-$clients.txt | tail -4; cat /tmp/ov/probe-$name-$clients.txt.metrics
