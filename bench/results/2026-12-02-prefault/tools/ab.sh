#!/bin/bash
# ab.sh BASE NEW [ROUNDS]: the two builds side by side, rounds interleaved:
# 500 clients with no limit, at 1 GiB and at 512 MiB, 500 clients in cells
# mode with no limit, and 10 clients with no limit (goodput's anchor), each
# a pfstat.sh line. Run from the repository's root on a quiet machine.
T=$(cd "$(dirname "$0")" && pwd)
base=$1 new=$2 rounds=${3:-3}
for r in $(seq 1 "$rounds"); do
  for row in "none 500" "1g 500" "512m 500" "none 10" "cells 500"; do
    set -- $row
    env=(THUMBD_MEMORY_LIMIT=8589934592)
    case $1 in 1g) env=(THUMBD_MEMORY_LIMIT=1073741824) ;; 512m) env=(THUMBD_MEMORY_LIMIT=536870912) ;; cells) env+=(THUMBD_ENGINE=cells) ;; esac
    for b in base new; do
      bin=$base; [ $b = new ] && bin=$new
      "$T/pfstat.sh" "$b-$1-$2-r$r" "$bin" "$2" "${env[@]}"
    done
  done
done
