#!/bin/bash
# bench overload -duration 10s: H (726aa56) and M (this change, with the images' GLIBC_TUNABLES)
# in turn at 1 GiB in process, then M at 256 MiB in both engine modes
cd /work/tmp/post
T=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864
B=/tmp/thumbd-benchbin-m
for i in 1 2; do
  $B overload -duration 10s -json ab-H-$i.json -env THUMBD_MEMORY_LIMIT=1073741824 -env THUMBD_ENGINE=inprocess -- /tmp/st/H/thumbd-static > ab-H-$i.out 2>&1
  $B overload -duration 10s -json ab-M-$i.json -env THUMBD_MEMORY_LIMIT=1073741824 -env THUMBD_ENGINE=inprocess -env GLIBC_TUNABLES=$T -- /tmp/st/M/thumbd-static > ab-M-$i.out 2>&1
done
for e in inprocess cells; do
  $B overload -duration 10s -json m256-$e.json -env THUMBD_MEMORY_LIMIT=268435456 -env THUMBD_ENGINE=$e -env GLIBC_TUNABLES=$T -- /tmp/st/M/thumbd-static > m256-$e.out 2>&1
done
touch done
