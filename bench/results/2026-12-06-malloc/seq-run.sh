#!/bin/bash
# seq (../2026-12-06-sharp-http/seq.go) against the Node twin, 5 rounds of 15:
# M with the images' GLIBC_TUNABLES, M without (the thresholds alone), M with again
cd /work/tmp/post
T=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864
SEQ=/tmp/st/seq/seq
start_twin() { (cd /work/main/bench/twins/node && PORT=8094 taskset -c 1 node server.mjs > /tmp/twin.log 2>&1 & echo $! > /tmp/twin.pid); sleep 2; }
stop_twin() { kill $(cat /tmp/twin.pid) 2>/dev/null; sleep 0.5; }
for v in tuned bare tuned2; do
  start_twin
  if [ $v = bare ]; then PORT=8093 THUMBD_MERGE=false taskset -c 1 /tmp/st/M/thumbd-static > /tmp/m.log 2>&1 & else
    GLIBC_TUNABLES=$T PORT=8093 THUMBD_MERGE=false taskset -c 1 /tmp/st/M/thumbd-static > /tmp/m.log 2>&1 & fi
  mp=$!
  sleep 1
  taskset -c 0 $SEQ -a http://127.0.0.1:8093 -b http://127.0.0.1:8094 -rounds 5 -n 15 > seq-$v.out 2>&1
  kill $mp; wait $mp 2>/dev/null; stop_twin
done
