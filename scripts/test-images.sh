#!/usr/bin/env bash
# CI for the images: builds thumbd:slim and thumbd:scratch (scripts/images.sh)
# and runs their Go tests (bench/internal/imagecheck): a container of each on
# a loopback port (/health, a real thumbnail, /metrics, a bad body, `thumbd
# health` inside, a non-root user, MALLOC_ARENA_MAX=2 and GLIBC_TUNABLES, CA certificates,
# licence notices, GET /thumbnail?url= from a loopback origin; the scratch
# container read-only, with no capabilities and no-new-privileges), then
# thumbd:scratch with no settings under a 256 MiB memory limit, saturated by
# 500 clients. Stops the dockerd it started.
# Usage: scripts/test-images.sh [--no-build] [go test flags...]   (as root;
# --no-build tests the thumbd:slim and thumbd:scratch images as they are)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh

main() {
  trap docker_down EXIT
  docker_up
  if [ "${1:-}" = --no-build ]; then shift; scripts/images.sh --sizes-only; else scripts/images.sh slim scratch; fi
  THUMBD_TEST_IMAGES=1 go test -count=1 -v -timeout 15m "$@" ./bench/internal/imagecheck
}

main "$@"
