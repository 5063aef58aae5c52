#!/usr/bin/env bash
# Builds thumbd binaries into bin/, one flavour per name, each with its own Go
# build cache (otherwise the cgo package built for one libvips is silently
# reused for another):
#   dynamic  bin/thumbd         Debian's libvips (libvips-dev), the dev build
#   slim     bin/thumbd-slim    the project's shared libvips (scripts/build-libvips.sh),
#                               found through an rpath to its prefix
#   static   bin/thumbd-static  fully static: the project's static libvips, glibc,
#                               netgo/osusergo; runs FROM scratch
# Usage: scripts/build.sh [dynamic|slim|static|all]...   (default: dynamic)
# Env: VIPS_PREFIX (default: whatever scripts/build-libvips.sh prints),
#      THUMBD_CACHE (default /var/cache/thumbd; holds the Go caches),
#      OUT (default bin).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly CACHE="${THUMBD_CACHE:-/var/cache/thumbd}"
readonly OUT="${OUT:-bin}"

vips_prefix() {
  [ -n "${VIPS_PREFIX:-}" ] || VIPS_PREFIX=$(scripts/build-libvips.sh | tail -1)
  echo "$VIPS_PREFIX"
}

gobuild() {
  local flavour=$1; shift
  GOCACHE="$CACHE/gocache-$flavour" GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=1 \
    go build -trimpath "$@" ./service
}

build_dynamic() {
  gobuild dynamic -o "$OUT/thumbd"
  echo "$OUT/thumbd: libvips $(pkg-config --modversion vips) (Debian)" >&2
}

build_slim() {
  local prefix; prefix=$(vips_prefix)
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" CGO_LDFLAGS="-Wl,-rpath,$prefix/lib" \
    gobuild slim -ldflags '-s -w' -o "$OUT/thumbd-slim"
  ldd "$OUT/thumbd-slim" | grep -q "$prefix/lib/libvips.so" || {
    echo "build.sh: $OUT/thumbd-slim does not use $prefix/lib/libvips.so" >&2; return 1; }
  echo "$OUT/thumbd-slim: libvips from $prefix (shared)" >&2
}

build_static() {
  local prefix wrapper; prefix=$(vips_prefix)
  wrapper="$prefix/bin/pkg-config-static"
  printf '#!/bin/sh\nexec pkg-config --static "$@"\n' >"$wrapper"; chmod +x "$wrapper"
  # The linker warns that glibc's getpwnam, getaddrinfo & co. need its shared
  # NSS modules at run time: GLib references them, thumbd never calls them
  # (and netgo/osusergo keep Go's own code off them). Those warnings are
  # counted, anything else is shown.
  local log; log=$(mktemp)
  if ! PKG_CONFIG="$wrapper" PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
      gobuild static -tags netgo,osusergo \
      -ldflags '-s -w -linkmode external -extldflags "-static"' -o "$OUT/thumbd-static" 2>"$log"; then
    cat "$log" >&2; rm -f "$log"; return 1
  fi
  grep -v -e 'statically linked applications requires at runtime' -e ': in function `' \
    -e '^# github.com/thumbd' "$log" >&2 || true
  echo "  ($(grep -c 'statically linked applications' "$log") glibc NSS link warnings, expected)" >&2
  rm -f "$log"
  if ! file "$OUT/thumbd-static" | grep -q 'statically linked' \
     || ldd "$OUT/thumbd-static" >/dev/null 2>&1; then
    echo "build.sh: $OUT/thumbd-static is not static: $(file -b "$OUT/thumbd-static")" >&2; return 1
  fi
  echo "$OUT/thumbd-static: static, libvips from $prefix" >&2
}

main() {
  [ $# -eq 0 ] && set -- dynamic
  [ "$*" = all ] && set -- dynamic slim static
  mkdir -p "$OUT"
  local flavour
  for flavour in "$@"; do
    case "$flavour" in
      dynamic|slim|static) "build_$flavour" ;;
      *) echo "build.sh: unknown flavour: $flavour" >&2; return 2 ;;
    esac
    if [ "$flavour" = dynamic ]; then ls -l "$OUT/thumbd"; else ls -l "$OUT/thumbd-$flavour"; fi >&2
  done
}

main "$@"
