#!/bin/bash
cd /work/main
T=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864
B=/tmp/tb
BIN=/tmp/cur/thumbd-static
for i in 1 2; do
  $B overload -duration 10s -json /tmp/ov/1g-$i.json -env THUMBD_MEMORY_LIMIT=1073741824 -env THUMBD_ENGINE=inprocess -env GLIBC_TUNABLES=$T -- $BIN > /tmp/ov/1g-$i.out 2>&1
done
for e in inprocess cells; do
  $B overload -duration 10s -json /tmp/ov/256-$e.json -env THUMBD_MEMORY_LIMIT=268435456 -env THUMBD_ENGINE=$e -env GLIBC_TUNABLES=$T -- $BIN > /tmp/ov/256-$e.out 2>&1
done
date > /tmp/ov/done
