#!/usr/bin/env bash
# Builds what the bench needs and runs the bench driver (bench/, see
# `go run ./bench -h`) on the default suite: bin/thumbd-static and bin/thumbd
# as processes, thumbd:scratch and thumbd:slim as containers (when Docker and
# the images are there), and the Node.js twin.
# Usage: scripts/bench.sh [--quick] [--no-build] [--images] [DRIVER FLAGS...]
#   --quick     smoke run: 1 startup run, 1 s steps, 10 clients; builds only
#               bin/thumbd (not the static libvips); output in bench/results/tmp/quick
#   --no-build  use bin/ and the images as they are
#   --images    also build the container images (scripts/images.sh)
# Results: bench/results/DATE/{results.json,report.md,*.svg}. The driver
# holds /tmp/thumbd-bench.lock itself while timing: do not wrap this script
# in flock(1).
set -euo pipefail
cd "$(dirname "$0")/.."

main() {
  local quick=0 build=1 images=0 args=()
  for a in "$@"; do
    case "$a" in
      --quick) quick=1; args+=(-quick) ;;
      --no-build) build=0 ;;
      --images) images=1 ;;
      *) args+=("$a") ;;
    esac
  done
  if [ "$build" = 1 ]; then
    scripts/deps.sh dev node
    if [ -x scripts/build.sh ]; then
      if [ "$quick" = 1 ]; then scripts/build.sh dynamic; else scripts/build.sh dynamic static; fi
    else
      echo "bench.sh: scripts/build.sh not found; building bin/thumbd only" >&2
      mkdir -p bin && go build -o bin/thumbd ./service
    fi
    if [ "$images" = 1 ]; then scripts/images.sh; fi
  fi
  mkdir -p bin
  go build -o bin/thumbd-bench ./bench
  THUMBD_BENCH_COMMAND="scripts/bench.sh $*" exec bin/thumbd-bench "${args[@]}"
}

main "$@"
