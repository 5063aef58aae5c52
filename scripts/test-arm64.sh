#!/usr/bin/env bash
# arm64 under emulation, on an amd64 machine: cross-builds the static
# binary and the engine's and the service's test binaries for arm64
# (THUMBD_TARGET=arm64 scripts/build.sh; the arm64 libvips recipe is built
# once, then cached), runs them under qemu-user (a static binary needs no
# binfmt handler), and compares the arm64 server's thumbnails with the
# amd64 one's: the same sizes, and the PSNR where the pixels differ.
#   1. the engine's golden tests and the rest of service/internal/thumb
#      but those that measure RSS or run the test binary again in a child
#      (the kernel cannot exec an arm64 binary without a binfmt handler;
#      $THUMBD_ARM64_ENGINE_SKIP);
#   2. the hostile corpus (service's TestHostile*);
#   3. the HTTP contract, as the bench checks every target;
#   4. the golden cases and one source per input format through both
#      servers, compared.
# docs/images.md, "arm64", has the results and what differs.
# Usage: scripts/test-arm64.sh [--no-build]   (as root; about 25 CPU-minutes
# cold for the recipe, then minutes; --no-build: out/arm64's binaries and
# out/amd64/thumbd-static as they are)
set -euo pipefail
cd "$(dirname "$0")/.."

readonly ARM64_OUT=out/arm64 # not OUT: build.sh reads OUT, and a readonly one cannot be given to it
readonly QEMU=qemu-aarch64-static
readonly ENGINE_SKIP=${THUMBD_ARM64_ENGINE_SKIP:-PeakRSS|TestInputsSettingBlocksLoaders}
# Well under the PSNR (dB) where two thumbnails are told apart by eye; the
# goal for pixels that SIMD paths make differ.
readonly MIN_PSNR=45

step() { printf '\n--- %s (%s)\n' "$*" "$(date -u +%T)"; }

build() {
  THUMBD_TARGET=arm64 OUT=$ARM64_OUT scripts/build.sh static
  OUT=out/amd64 scripts/build.sh static
  THUMBD_TARGET=arm64 scripts/build.sh go static test -c -o "$ARM64_OUT/thumb.test" ./service/internal/thumb
  THUMBD_TARGET=arm64 scripts/build.sh go static test -c -o "$ARM64_OUT/service.test" ./service
}

# tools: qemu's wrapper as a command the bench can start, and the bench.
tools() {
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$PWD/$ARM64_OUT/thumbd-static" >"$ARM64_OUT/thumbd-qemu"
  chmod +x "$ARM64_OUT/thumbd-qemu"
  go build -o bin/thumbd-bench ./bench
}

# sources DIR: the golden tests' JPEGs and one source per other input
# format, made from small.jpg with Debian's tools (the decoders are where
# dav1d's, libde265's, libjxl's and Highway's SIMD paths run).
sources() {
  local d=$1 s=service/internal/thumb/testdata/sources
  cp "$s/small.jpg" "$s/large.jpg" "$d/"
  vips copy "$d/small.jpg" "$d/small.png"
  vips copy "$d/small.jpg" "$d/small.webp[Q=90]"
  vips copy "$d/small.jpg" "$d/small.avif[Q=80,compression=av1]"
  vips copy "$d/small.jpg" "$d/small.tif[compression=jpeg]"
  heif-enc -q 80 -o "$d/small.heic" "$d/small.png" >/dev/null
  cjxl -q 90 "$d/small.png" "$d/small.jxl" >/dev/null 2>&1
}

# compare_thumbnails AMD64_URL ARM64_URL DIR: each request to both servers;
# a row per request: sizes, bytes, PSNR (inf: the same pixels). Fails on
# another size or a PSNR under MIN_PSNR.
compare_thumbnails() {
  local a=$1 b=$2 d=$3 status=0 src query n=0 wa wb psnr
  printf '| source | query | amd64 WxH, bytes | arm64 WxH, bytes | PSNR dB |\n|---|---|---|---|---|\n'
  while read -r src query; do
    n=$((n + 1))
    curl -fsS -o "$d/a$n" --data-binary "@$d/$src" "$a/thumbnail?$query"
    curl -fsS -o "$d/b$n" --data-binary "@$d/$src" "$b/thumbnail?$query"
    vips copy "$d/a$n" "$d/a$n.png" && vips copy "$d/b$n" "$d/b$n.png"
    wa=$(vipsheader -f width "$d/a$n.png")x$(vipsheader -f height "$d/a$n.png")
    wb=$(vipsheader -f width "$d/b$n.png")x$(vipsheader -f height "$d/b$n.png")
    psnr=$(compare -metric PSNR "$d/a$n.png" "$d/b$n.png" null: 2>&1 || true)
    printf '| %s | `%s` | %s, %s | %s, %s | %s |\n' "$src" "$query" "$wa" "$(wc -c <"$d/a$n")" "$wb" "$(wc -c <"$d/b$n")" "$psnr"
    if [ "$wa" != "$wb" ]; then echo "  another size" >&2; status=1; fi
    if [ "$psnr" != inf ] && awk -v p="$psnr" -v m="$MIN_PSNR" 'BEGIN { exit !(p + 0 < m) }'; then
      echo "  PSNR under $MIN_PSNR dB" >&2; status=1
    fi
  done <<'REQUESTS'
small.jpg w=256&h=256&fit=cover&gravity=centre&format=png
small.jpg w=128&h=256&fit=cover&gravity=attention&format=png
large.jpg w=200&h=100&fit=cover&gravity=entropy&format=png
large.jpg w=200&h=200&fit=contain&format=png
large.jpg w=160&h=90&fit=fill&format=png
large.jpg w=300&h=300&fit=inside&format=png
small.jpg w=120&h=90&format=jpeg&q=90
small.jpg w=120&h=90&format=webp&q=80
small.jpg w=120&h=90&format=avif&q=80
large.jpg w=320&h=240&format=jpeg&q=80
small.png w=200&h=150&format=png
small.webp w=200&h=150&format=png
small.avif w=200&h=150&format=png
small.heic w=200&h=150&format=png
small.jxl w=200&h=150&format=png
small.tif w=200&h=150&format=png
REQUESTS
  return $status
}

main() {
  mkdir -p "$ARM64_OUT"
  local start=$SECONDS t
  if [ "${1:-}" != --no-build ]; then
    step "cross build: the static binary, the engine's and the service's test binaries"
    build
  fi
  tools
  file -b "$ARM64_OUT/thumbd-static"
  "$ARM64_OUT/thumbd-qemu" version
  step "service/internal/thumb under qemu (-skip '$ENGINE_SKIP')"
  t=$SECONDS
  (cd service/internal/thumb && "$QEMU" "../../../$ARM64_OUT/thumb.test" -test.skip "$ENGINE_SKIP" -test.count=1 -test.timeout=30m)
  echo "  $((SECONDS - t)) s"
  step "the hostile corpus (service, TestHostile*) under qemu"
  t=$SECONDS
  (cd service && "$QEMU" "../$ARM64_OUT/service.test" -test.run '^TestHostile' -test.count=1 -test.timeout=30m)
  echo "  $((SECONDS - t)) s"
  step "the contract, against the arm64 server"
  t=$SECONDS
  # -cells=false: the cell arms time the host's own static binary, not
  # the arm64 one (they once failed inside this step unnoticed).
  bin/thumbd-bench -target "arm64=process:$ARM64_OUT/thumbd-qemu" -routes health,json,compute,hash,thumb-small,thumb-small-webp,thumb-small-avif,thumb-animated-webp,info-photo12-header \
    -duration 1s -warmup 0s -runs 1 -concurrency 1 -cells=false -out "$ARM64_OUT/bench"
  if grep '✗' "$ARM64_OUT/bench/report.md"; then echo "test-arm64.sh: the arm64 server failed the contract" >&2; return 1; fi
  echo "  $((SECONDS - t)) s"
  step "thumbnails of amd64 and arm64 compared"
  local d; d=$(mktemp -d)
  sources "$d"
  # One server each; the inner one's -run sees the outer's URL as AMD64.
  printf 'AMD64=$THUMBD_URL bin/thumbd-bench serve -timeout 5m -log %s/arm64.log -run %q -- %s\n' \
    "$d" "scripts/test-arm64.sh --compare \"\$AMD64\" \"\$THUMBD_URL\" $d" "$ARM64_OUT/thumbd-qemu" >"$d/both.sh"
  bin/thumbd-bench serve -log "$d/amd64.log" -run "sh $d/both.sh" -- out/amd64/thumbd-static | tee "$ARM64_OUT/compare.md"
  rm -rf "$d"
  echo "test-arm64.sh: passed in $((SECONDS - start)) s"
}

if [ "${1:-}" = --compare ]; then shift; compare_thumbnails "$@"; exit; fi
main "$@"
