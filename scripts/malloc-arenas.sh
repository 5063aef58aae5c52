#!/usr/bin/env bash
# Counts glibc malloc arenas in a thumbd binary after a short parallel load:
# shows whether MALLOC_ARENA_MAX reaches its malloc (the static binary's
# glibc included). 200 large-source thumbnails from 16 clients, concurrency 4.
# Usage: scripts/malloc-arenas.sh BIN [NAME=VALUE...]
#   e.g. scripts/malloc-arenas.sh bin/thumbd-static MALLOC_ARENA_MAX=2
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/serve.sh

main() {
  local bin=$1; shift
  local port pid src=service/internal/thumb/testdata/sources/large.jpg
  port=$(free_port)
  env PORT="$port" THUMBD_CONCURRENCY=4 THUMBD_QUEUE=64 "$@" "$bin" 2>/dev/null & pid=$!
  trap "kill $pid 2>/dev/null || true" EXIT
  wait_ready "http://127.0.0.1:$port" 10 "$pid" || true
  seq 200 | xargs -P 16 -I{} curl -s -o /dev/null --data-binary "@$src" \
    "http://127.0.0.1:$port/thumbnail?w=256&h=256&format=webp"
  echo "$bin $*: $(arenas "$pid") glibc arenas besides the main one"
}

# arenas PID: a non-main glibc arena is a heap aligned to its 64 MiB maximum,
# mapped as a read-write part plus a reserved (---p) rest, 65536 kB in all.
# (Go's heap does not show this shape: with MALLOC_ARENA_MAX=1 the count is 0.)
arenas() {
  python3 - "$1" <<'PY'
import sys
regs = []
for line in open(f"/proc/{sys.argv[1]}/maps"):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    regs.append((lo, hi, f[1], len(f) == 5))  # 5 fields: anonymous
heap = 64 << 20
n = 0
for i, (lo, hi, perm, anon) in enumerate(regs):
    if lo % heap or perm != "rw-p" or not anon:
        continue
    size, j = 0, i
    while j < len(regs) and regs[j][0] < lo + heap and regs[j][3]:
        size += regs[j][1] - regs[j][0]
        j += 1
    n += size == heap
print(n)
PY
}

main "$@"
