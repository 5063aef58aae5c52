#!/bin/bash
# thr.sh NAME CPUS MEM CLIENTS [env...]: one bench memory run of thumbd:scratch on
# the host network with --cpus CPUS, sampling the container's cpu.stat.
W=/tmp/thr; mkdir -p $W
name=$1 cpus=$2 mem=$3 clients=$4; shift 4
envs=(); for e in "$@"; do envs+=(-env "$e"); done
( last=""; for i in $(seq 1 600); do
    id=$(docker ps --no-trunc --latest --quiet --filter ancestor=thumbd:scratch 2>/dev/null)
    if [ -n "$id" ]; then
      f=$(ls -d /sys/fs/cgroup/cpu/docker/$id 2>/dev/null || ls -d /sys/fs/cgroup/cpu,cpuacct/docker/$id 2>/dev/null)
      [ -n "$f" ] && cat $f/cpu.stat > $W/cpustat-$name.txt 2>/dev/null
    fi
    sleep 0.1
  done ) & sp=$!
/tmp/ovbench memory -lock "" -image thumbd:scratch -memory "$mem" -cpus "$cpus" -clients "$clients" -duration 5s -probe 100ms -source /work/main/bench/results/tmp/sources/photo12.jpg "${envs[@]}" > $W/out-$name.txt 2>$W/err-$name.txt
kill $sp 2>/dev/null
echo "== $name"; grep -E "thumbnails/s|p99" $W/out-$name.txt | cut -c1-220; cat $W/cpustat-$name.txt | tr '\n' ' '; echo
