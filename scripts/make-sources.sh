#!/usr/bin/env bash
# Makes photo-like JPEG test sources with libvips itself (Perlin + Worley noise
# in CIELAB plus a little grain; flat noise compresses unlike a photo).
# Usage: scripts/make-sources.sh OUTDIR
# Writes OUTDIR/small.jpg (400x300 Q70, ~12 KB), OUTDIR/large.jpg
# (1920x1280 Q85, ~340 KB) and OUTDIR/huge.jpg (4000x3000 Q94, ~3.8 MB).
# Deterministic (fixed seeds); existing files are kept. Needs `vips`
# (libvips-tools, `scripts/deps.sh dev`).
set -euo pipefail

die() { echo "make-sources.sh: $*" >&2; exit 1; }

# make_one OUT W H Q
make_one() {
  local out="$1" w="$2" h="$3" q="$4" tmp
  [ -s "$out" ] && return 0
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"; trap - RETURN' RETURN
  (
    cd "$tmp"
    vips perlin p1.v "$w" "$h" --cell-size $((w / 4)) --seed 11
    vips perlin p2.v "$w" "$h" --cell-size $((w / 16)) --seed 12
    vips perlin p3.v "$w" "$h" --cell-size $((w / 64 + 2)) --seed 13
    vips perlin pa.v "$w" "$h" --cell-size $((w / 3)) --seed 14
    vips perlin pb.v "$w" "$h" --cell-size $((w / 5)) --seed 15
    vips worley wo.v "$w" "$h" --cell-size $((w / 10)) --seed 16
    # L = 35*p1+50 + 12*p2 + 5*p3 + 15*(wo/(W/10)) - 7
    vips linear p1.v l1.v 35 43  # 50 - 7
    vips linear p2.v l2.v 12 0
    vips linear p3.v l3.v 5 0
    vips linear wo.v l4.v "$(awk -v w="$w" 'BEGIN { printf "%.9f", 15 / (w / 10) }')" 0
    vips add l1.v l2.v l12.v
    vips add l12.v l3.v l123.v
    vips add l123.v l4.v L.v
    vips linear pa.v A.v 40 5
    vips linear pb.v B.v 45 15
    vips bandjoin "L.v A.v B.v" lab0.v
    vips copy lab0.v lab.v --interpretation lab
    vips colourspace lab.v rgb.v srgb
    vips gaussnoise n1.v "$w" "$h" --sigma 4 --mean 0 --seed 21
    vips gaussnoise n2.v "$w" "$h" --sigma 4 --mean 0 --seed 22
    vips gaussnoise n3.v "$w" "$h" --sigma 4 --mean 0 --seed 23
    vips bandjoin "n1.v n2.v n3.v" noise.v
    vips add rgb.v noise.v grain.v
    vips cast grain.v u8.v uchar
    vips copy u8.v srgb.v --interpretation srgb
    vips jpegsave srgb.v out.jpg --Q "$q" --strip
  )
  mv "$tmp/out.jpg" "$out"
}

main() {
  [ $# -eq 1 ] || die "usage: make-sources.sh OUTDIR"
  command -v vips >/dev/null || die "vips not found (scripts/deps.sh dev installs libvips-tools)"
  mkdir -p "$1"
  make_one "$1/small.jpg" 400 300 70
  make_one "$1/large.jpg" 1920 1280 85
  make_one "$1/huge.jpg" 4000 3000 94
  ls -l "$1"/small.jpg "$1"/large.jpg "$1"/huge.jpg
}

main "$@"
