#!/usr/bin/env bash
# The engine comparison of issue 3: per-thumbnail median ms and output bytes of
# a 256x256 cover PNG from the same two photo-like JPEGs (400x300 Q70 and
# 1920x1280 Q85, scripts/make-sources.sh), single-threaded, in process, for
#   dynamic  Debian's libvips 8.14 (bin/thumbd's engine)
#   slim     the project's shared libvips 8.16 + Highway (thumbd:slim's engine)
#   static   the project's static libvips 8.16 + Highway (thumbd:scratch's engine)
#   sharp    the Node twin's sharp (bench/twins/node/engine-bench.mjs)
# The Go side is BenchmarkEngine of service/internal/thumb, built once per
# flavour (scripts/build.sh's environments) and run one thumbnail per sample.
# Engines take turns, round by round, so all see the same machine; a round's
# median per engine and source, then the median over rounds, is reported.
# Usage: scripts/engine-compare.sh [-r ROUNDS] [-n SAMPLES_PER_ROUND]   (defaults 5, 20)
set -euo pipefail
source "$(dirname "$0")/build.sh"   # flavour_go; cds to the repo root

readonly THUMB=service/internal/thumb
readonly NODE_TWIN=bench/twins/node
ROUNDS=5
SAMPLES=20

ensure_sources() {
  [ -s "$THUMB/testdata/sources/small.jpg" ] && [ -s "$THUMB/testdata/sources/large.jpg" ] && return 0
  local tmp; tmp=$(mktemp -d)
  scripts/make-sources.sh "$tmp" >/dev/null
  mkdir -p "$THUMB/testdata/sources"
  cp "$tmp/small.jpg" "$tmp/large.jpg" "$THUMB/testdata/sources/"
  rm -rf "$tmp"
}

# go_round FLAVOUR OUTFILE: appends "flavour source ms bytes" per sample.
go_round() {
  (cd "$THUMB" && VIPS_CONCURRENCY=1 "$WORK/thumb-$1.test" -test.run '^$' \
     -test.bench '^BenchmarkEngine$' -test.benchtime 1x -test.count "$SAMPLES") |
  awk -v f="$1" '/^BenchmarkEngine\// {
      split($1, a, "/"); sub(/-[0-9]+$/, "", a[2]); sub(/\.jpg$/, "", a[2])
      for (i = 3; i <= NF; i++) { if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "out-bytes") b = $i }
      printf "%s %s %.3f %d\n", f, a[2], ns / 1e6, b }' >>"$2"
}

# sharp_round OUTFILE: appends "sharp source median_ms bytes" per source.
sharp_round() {
  local small large
  small=$(realpath "$THUMB/testdata/sources/small.jpg"); large=$(realpath "$THUMB/testdata/sources/large.jpg")
  (cd "$NODE_TWIN" && node engine-bench.mjs --iterations "$SAMPLES" "$small" "$large") |
  awk '/"file"/ {
      match($0, /"file":"[^"]*"/); f = substr($0, RSTART + 8, RLENGTH - 9); n = split(f, p, "/"); s = p[n]; sub(/\.jpg$/, "", s)
      match($0, /"median_ms":[0-9.]+/); ms = substr($0, RSTART + 12, RLENGTH - 12)
      match($0, /"bytes":[0-9]+/); b = substr($0, RSTART + 8, RLENGTH - 8)
      printf "sharp %s %.3f %d\n", s, ms, b }' >>"$1"
}

# report FILE: median per (engine, source) of the per-round medians.
report() {
  python3 - "$1" "$ROUNDS" <<'EOF'
import sys, statistics, collections
rows = collections.defaultdict(lambda: collections.defaultdict(list))
sizes = {}
for line in open(sys.argv[1]):
    rnd, eng, src, ms, b = line.split()
    rows[(eng, src)][rnd].append(float(ms)); sizes[(eng, src)] = int(b)
def med(eng, src):
    return statistics.median(statistics.median(v) for v in rows[(eng, src)].values())
engines = [e for e in ("dynamic", "slim", "static", "sharp") if (e, "small") in rows]
print(f"{'engine':8} {'small ms':>9} {'small B':>8} {'vs sharp':>8} {'large ms':>9} {'large B':>8} {'vs sharp':>8}")
for e in engines:
    cells = []
    for s in ("small", "large"):
        m = med(e, s); ref = med("sharp", s) if ("sharp", s) in rows else None
        cells.append(f"{m:9.2f} {sizes[(e, s)]:8d} {(m / ref if ref else float('nan')):7.2f}x")
    print(f"{e:8} " + " ".join(cells))
print(f"(per-thumbnail medians over {sys.argv[2]} rounds; 256x256 cover PNG; one libvips thread)")
EOF
}

main() {
  while getopts r:n: opt; do
    case "$opt" in r) ROUNDS=$OPTARG ;; n) SAMPLES=$OPTARG ;; *) return 2 ;; esac
  done
  ensure_sources
  [ -d "$NODE_TWIN/node_modules" ] || scripts/deps.sh node
  WORK=$(mktemp -d /tmp/thumbd-engine.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT
  local f
  for f in dynamic slim static; do
    flavour_go "$f" test -c -o "$WORK/thumb-$f.test" "./$THUMB" 2> >(grep -v -e 'statically linked' -e ': in function' -e '^# ' >&2)
  done
  echo "libvips: dynamic $(pkg-config --modversion vips), slim/static $(PKG_CONFIG_PATH="$(vips_prefix)/lib/pkgconfig" pkg-config --modversion vips); $(nproc) CPUs; $ROUNDS rounds x $SAMPLES samples" >&2
  local r raw="$WORK/raw"
  exec 9>/tmp/thumbd-bench.lock
  flock 9
  for r in $(seq 1 "$ROUNDS"); do
    for f in dynamic slim static; do go_round "$f" "$WORK/round"; done
    sharp_round "$WORK/round"
    sed "s/^/$r /" "$WORK/round" >>"$raw"; rm -f "$WORK/round"
  done
  flock -u 9
  report "$raw"
}

main "$@"
