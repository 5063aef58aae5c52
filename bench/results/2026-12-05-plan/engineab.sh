#!/usr/bin/env bash
# Issue 46's "nothing gets slower", the engine alone: BenchmarkEngine of
# service/internal/thumb (one libvips thread, the operation cache off, each
# sample's median of -benchtime thumbnails) built static against the
# recipe's libvips before the plan (5819aa9^1, thumb-base.test) and at this
# commit (thumb-main.test), and sharp (twins/node/engine-bench.mjs), the 9
# cases (photo12, large, small x JPEG, WebP, PNG, 256x256 cover), all on
# CPU 1, ROUNDS rounds: sharp's 9, then each case's two builds back to
# back, their order alternating round by round. Prints "case target ms".
#   scripts/build.sh go static test -c -o $D/thumb-X.test ./service/internal/thumb  (each tree)
set -euo pipefail
D=${D:-/tmp/seq46} ROUNDS=${ROUNDS:-7} N=${N:-20}
node=$(dirname "$0")/../../twins/node/engine-bench.mjs
export THUMBD_ENGINE_SOURCES=$D/sources
go_side() { # build, case (photo12/jpeg): one process each, so that a case's two builds run back to back
  local src=${2%/*} fmt=${2#*/}
  (cd /work/main/service/internal/thumb && THUMBD_ENGINE_FORMATS=$fmt taskset -c 1 "$D/thumb-$1.test" -test.run '^$' -test.bench "^BenchmarkEngine\$/^$src\$/" -test.benchtime "${N}x") |
    awk -v t="$1" '/^BenchmarkEngine\// { split($1, n, "/"); sub(/-[0-9]+$/, "", n[3]); for (i = 1; i <= NF; i++) if ($(i+1) == "median-ms") print n[2] "/" n[3], t, $i }'
}
sharp_side() {
  taskset -c 1 node "$node" --iterations "$N" --formats jpeg,webp,png "$D"/sources/{photo12,large,small}.jpg |
    python3 -c 'import json,sys,os
for l in sys.stdin:
    r=json.loads(l)
    if "file" in r: print(os.path.basename(r["file"])[:-4]+"/"+r["format"], "sharp", r["median_ms"])'
}
for r in $(seq "$ROUNDS"); do
  sharp_side
  for c in {photo12,large,small}/{jpeg,webp,png}; do
    if ((r % 2)); then go_side base "$c"; go_side main "$c"; else go_side main "$c"; go_side base "$c"; fi
  done
done
