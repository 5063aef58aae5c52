#!/usr/bin/env bash
# One command for both images: installs docker.io and starts dockerd when none
# runs (left running; scripts/test-images.sh stops the one it started), makes
# sure the base images exist (scripts/base-images.sh), builds and tags
# thumbd:slim and thumbd:scratch, prints their sizes. The builder stage
# builds only libvips when this machine has built the recipe's other
# libraries on the host already (scripts/libvips-seed/README.md).
# Usage: scripts/images.sh [slim|scratch]...   (default: both; as root)
#        scripts/images.sh --sizes-only       (only print the sizes)
# Env: THUMBD_LOCK=0 to skip taking /tmp/thumbd-build.lock around docker build.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh

build_image() {
  local flavour=$1 version revision
  version=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || echo dev)
  revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  local cmd=(docker build -q --force-rm -f "Dockerfile.$flavour" -t "thumbd:$flavour"
             --build-arg "VERSION=$version" --build-arg "REVISION=$revision" .)
  echo "docker build -f Dockerfile.$flavour -t thumbd:$flavour" >&2
  local start=$SECONDS
  if [ "${THUMBD_LOCK:-1}" = 1 ]; then flock /tmp/thumbd-build.lock "${cmd[@]}"; else "${cmd[@]}"; fi >/dev/null
  echo "  built in $((SECONDS - start)) s" >&2
}

print_sizes() {
  local flavour size gz
  printf '%-16s %14s %16s\n' image inspect_bytes gzip_save_bytes
  for flavour in "$@"; do
    size=$(docker image inspect -f '{{.Size}}' "thumbd:$flavour")
    gz=$(docker save "thumbd:$flavour" | gzip -c | wc -c)
    printf '%-16s %14s %16s   (%s MB / %s MB)\n' "thumbd:$flavour" "$size" "$gz" \
      "$(awk -v b="$size" 'BEGIN{printf "%.1f", b/1e6}')" "$(awk -v b="$gz" 'BEGIN{printf "%.1f", b/1e6}')"
  done
}

main() {
  if [ "${1:-}" = --sizes-only ]; then docker_up; print_sizes slim scratch; return; fi
  [ $# -eq 0 ] && set -- slim scratch
  docker_up
  scripts/base-images.sh
  # The host's libvips build, if any, seeds the builder (scripts/libvips-seed).
  scripts/build-libvips.sh --seed scripts/libvips-seed/codecs.tar
  local flavour
  for flavour in "$@"; do
    case "$flavour" in slim|scratch) build_image "$flavour" ;; *) echo "images.sh: unknown image: $flavour" >&2; return 2 ;; esac
  done
  print_sizes "$@"
}

main "$@"
