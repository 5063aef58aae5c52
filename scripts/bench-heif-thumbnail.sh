#!/usr/bin/env bash
# bench-heif-thumbnail.sh BINARY [N]: whether a HEIC's embedded thumbnail
# speeds up a 256-px WebP thumbnail (docs/thumbnails.md#source-formats).
# One 12 MP photo (the tests' large.jpg scaled to 4032x3024) as HEIC without
# an embedded thumbnail, with an iPhone-like 320x240 one and with a 512x384
# one (heif-enc -t); N sequential POSTs of each (default 25), interleaved,
# to BINARY on loopback with one job at a time; the median and the
# quartiles of each, in ms (curl's time_total). Run it under the bench lock:
#   go run ./bench lock -- scripts/bench-heif-thumbnail.sh bin/thumbd-static
set -euo pipefail
bin=$(realpath "$1")
n=${2:-25}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
vips resize "$root/service/internal/thumb/testdata/sources/large.jpg" "$dir/big.png" 2.1 --vscale 2.3625
heif-enc -q 60 "$dir/big.png" -o "$dir/none.heic" >/dev/null
heif-enc -q 60 -t 320 "$dir/big.png" -o "$dir/t320.heic" >/dev/null
heif-enc -q 60 -t 512 "$dir/big.png" -o "$dir/t512.heic" >/dev/null
port=$((20000 + RANDOM % 10000))
PORT=$port THUMBD_CONCURRENCY=1 "$bin" >"$dir/log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
# A case is FILE:FIT. The default fit, cover, needs 256 rows: an iPhone's
# 320x240 thumbnail serves 256x256 only with fit=inside.
post() { curl -fs -o /dev/null -w '%{time_total}\n' --data-binary "@$dir/${1%%:*}.heic" "http://127.0.0.1:$port/thumbnail?w=256&h=256&format=webp&fit=${1#*:}"; }
names=(none:cover none:inside t320:cover t320:inside t512:cover)
for f in "${names[@]}"; do post "$f" >/dev/null; post "$f" >/dev/null; done # warm-up
for _ in $(seq "$n"); do for f in "${names[@]}"; do post "$f" >>"$dir/$f.times"; done; done
echo "$(basename "$bin"): $n requests each, 256x256 WebP of 4032x3024"
for f in "${names[@]}"; do
  sort -n "$dir/$f.times" | awk -v f="$f" -v b="$(stat -c %s "$dir/${f%%:*}.heic")" \
    '{t[NR]=$1*1000} END {printf "%-12s %8d bytes  p25 %6.1f  median %6.1f  p75 %6.1f ms\n", f, b, t[int(NR/4)+1], t[int(NR/2)+1], t[int(3*NR/4)+1]}'
done
