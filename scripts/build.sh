#!/usr/bin/env bash
# Builds thumbd binaries into bin/, one flavour per name, each with its own Go
# build cache per libvips build: the Go cache does not notice a changed
# pkg-config answer, and silently links the cgo package built for one
# libvips against another (seen here: a new prefix, the old -L in the link).
#   dynamic  bin/thumbd         Debian's libvips (libvips-dev), the dev build
#   slim     bin/thumbd-slim    the project's shared libvips (scripts/build-libvips.sh),
#                               found through an rpath to its prefix
#   static   bin/thumbd-static  fully static: the project's static libvips, glibc,
#                               netgo/osusergo; runs FROM scratch
# Usage: scripts/build.sh [dynamic|slim|static|all]...   (default: dynamic)
#        scripts/build.sh go FLAVOUR GOCMD ARGS...  (`go GOCMD ARGS` as FLAVOUR builds:
#        how `bench engine` and `bench cells` build their test binaries)
#        scripts/build.sh vips-version FLAVOUR  (the libvips version FLAVOUR links)
#        scripts/build.sh vips-prefix  (the libvips prefix slim and static link)
# Env: VIPS_PREFIX (default: whatever scripts/build-libvips.sh prints),
#      THUMBD_CACHE (default /var/cache/thumbd; holds the Go caches),
#      OUT (default bin),
#      THUMBD_VERSION, THUMBD_REVISION: the release and the commit that
#      `thumbd version` prints (default: git describe's v* tag, else dev;
#      git's HEAD, -dirty when the tree differs from it, else unknown),
#      THUMBD_TARGET: the GOARCH to build for, default the machine's; arm64
#      on an amd64 machine cross-builds the static flavour with Debian's
#      cross toolchain against `THUMBD_TARGET=arm64 scripts/build-libvips.sh`'s
#      prefix (docs/images.md, "arm64").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly CACHE="${THUMBD_CACHE:-/var/cache/thumbd}"
readonly OUT="${OUT:-bin}"

vips_prefix() {
  [ -n "${VIPS_PREFIX:-}" ] || VIPS_PREFIX=$(scripts/build-libvips.sh | tail -1)
  echo "$VIPS_PREFIX"
}

# cross: true when THUMBD_TARGET names another architecture than the
# machine's (and only arm64 on amd64 is set up).
cross() {
  local target=${THUMBD_TARGET:-} host
  host=$(go env GOHOSTARCH)
  [ -n "$target" ] && [ "$target" != "$host" ] || return 1
  [ "$target/$host" = arm64/amd64 ] || { echo "build.sh: THUMBD_TARGET=$target on $host: only arm64 on amd64 cross-builds" >&2; exit 2; }
}

# stamp FLAVOUR [PREFIX]: the -X flags of what `thumbd version` and
# thumbd_build_info say (service/internal/buildinfo): the release, the
# commit, the flavour and, for slim and static, the recipe hash of the
# libvips prefix linked.
stamp() {
  local pkg=github.com/thumbd/thumbd/service/internal/buildinfo version revision recipe=
  version=${THUMBD_VERSION:-$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo dev)}
  revision=${THUMBD_REVISION:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
  if [ -z "${THUMBD_REVISION:-}" ] && [ "$revision" != unknown ] && ! git diff --quiet HEAD 2>/dev/null; then
    revision+=-dirty
  fi
  if [ -n "${2:-}" ]; then
    recipe=$(cat "$2/.thumbd-recipe" 2>/dev/null) || { echo "build.sh: $2 is no finished recipe build (no .thumbd-recipe)" >&2; return 1; }
  fi
  echo "-X $pkg.version=$version -X $pkg.revision=$revision -X $pkg.flavour=$1 -X $pkg.recipe=$recipe"
}

# flavour_go FLAVOUR GOCMD ARGS...: runs `go GOCMD` (build, test, ...) with the
# flavour's cgo environment, build cache, tags and link flags, then ARGS.
# `scripts/build.sh go FLAVOUR GOCMD ARGS...` runs it from outside.
flavour_go() {
  local flavour=$1 cmd=$2 prefix stamped; shift 2
  local env=(GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=1)
  local flags=(-trimpath)
  case "$flavour" in
    dynamic)
      env+=(GOCACHE="$CACHE/gocache-dynamic-$(pkg-config --modversion vips)")
      stamped=$(stamp dynamic) || return 1
      flags+=(-ldflags "$stamped") ;;
    slim)
      prefix=$(vips_prefix)
      env+=(GOCACHE="$CACHE/gocache-slim-${prefix##*/}"
            PKG_CONFIG_PATH="$prefix/lib/pkgconfig" CGO_LDFLAGS="-Wl,-rpath,$prefix/lib")
      stamped=$(stamp slim "$prefix") || return 1
      flags+=(-ldflags "-s -w $stamped") ;;
    static)
      prefix=$(vips_prefix)
      env+=(GOCACHE="$CACHE/gocache-static-${prefix##*/}")
      # Cross: Go for arm64, cgo through Debian's aarch64 gcc, the arm64
      # -dev packages' pkg-config files (GLib, libexif, zlib, expat).
      if cross; then
        env+=(GOARCH=arm64 CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++
              PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
      fi
      printf '#!/bin/sh\nexec pkg-config --static "$@"\n' >"$prefix/bin/pkg-config-static"
      chmod +x "$prefix/bin/pkg-config-static"
      env+=(PKG_CONFIG="$prefix/bin/pkg-config-static" PKG_CONFIG_PATH="$prefix/lib/pkgconfig")
      # --gc-sections: drops the unreferenced functions of the libraries
      # built with a section each (aom, libheif: 1.8 MB; build-libvips.sh).
      # thumbd_static: GLib's regex stubs (service/internal/thumb/noregex_static.go).
      stamped=$(stamp static "$prefix") || return 1
      flags+=(-tags netgo,osusergo,thumbd_static
              -ldflags "-s -w $stamped -linkmode external -extldflags \"-static -Wl,--gc-sections\"") ;;
    *) echo "build.sh: unknown flavour: $flavour" >&2; return 2 ;;
  esac
  if [ "$flavour" != static ] && cross; then
    echo "build.sh: THUMBD_TARGET=$THUMBD_TARGET: only the static flavour cross-builds" >&2; return 2
  fi
  env "${env[@]}" go "$cmd" "${flags[@]}" "$@"
}

build_dynamic() {
  flavour_go dynamic build -o "$OUT/thumbd" ./service
  echo "$OUT/thumbd: libvips $(pkg-config --modversion vips) (Debian)" >&2
}

build_slim() {
  local prefix; prefix=$(vips_prefix)
  flavour_go slim build -o "$OUT/thumbd-slim" ./service
  [[ "$(ldd "$OUT/thumbd-slim")" == *"=> $prefix/lib/libvips.so"* ]] || {
    echo "build.sh: $OUT/thumbd-slim does not use $prefix/lib/libvips.so" >&2; return 1; }
  echo "$OUT/thumbd-slim: libvips from $prefix (shared)" >&2
}

build_static() {
  local prefix log; prefix=$(vips_prefix); log=$(mktemp)
  # The linker warns that glibc's getpwnam, getaddrinfo & co. need its shared
  # NSS modules at run time: GLib references them, thumbd never calls them
  # (and netgo/osusergo keep Go's own code off them). Those warnings are
  # counted, anything else is shown.
  if ! flavour_go static build -o "$OUT/thumbd-static" ./service 2>"$log"; then
    cat "$log" >&2; rm -f "$log"; return 1
  fi
  grep -v -e 'statically linked applications requires at runtime' -e ': in function `' \
    -e '^# github.com/thumbd' "$log" >&2 || true
  echo "  ($(grep -c 'statically linked applications' "$log") glibc NSS link warnings, expected)" >&2
  rm -f "$log"
  if [[ "$(file "$OUT/thumbd-static")" != *'statically linked'* ]] \
     || { ! cross && ldd "$OUT/thumbd-static" >/dev/null 2>&1; }; then
    echo "build.sh: $OUT/thumbd-static is not static: $(file -b "$OUT/thumbd-static")" >&2; return 1
  fi
  echo "$OUT/thumbd-static: static, libvips from $prefix" >&2
}

main() {
  [ $# -eq 0 ] && set -- dynamic
  case "$1" in
    go) shift; flavour_go "$@"; return ;;
    vips-prefix) vips_prefix; return ;;
    vips-version)
      case "${2:-}" in
        dynamic) pkg-config --modversion vips ;;
        slim|static) PKG_CONFIG_PATH="$(vips_prefix)/lib/pkgconfig" pkg-config --modversion vips ;;
        *) echo "build.sh: unknown flavour: ${2:-}" >&2; return 2 ;;
      esac
      return ;;
  esac
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

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
