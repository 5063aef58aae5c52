#!/usr/bin/env bash
# Scale from zero (`bench coldstart`): fresh processes and containers, each
# timed from exec (or `docker run -d`) to its first GET /health and its first
# POST /thumbnail (the small JPEG, 256x256), and its idle VmRSS, beside the
# floor (bench/cmd/floor: a static Go hello-world) and the Node twin.
# Processes run on CPU 1, the driver on CPU 0; rounds are interleaved. The
# command holds the bench lock while it measures.
# Usage: [IMAGES="thumbd:slim thumbd:scratch"] scripts/coldstart.sh [-rounds 3] [-runs 10] [coldstart flags] [[NAME=]exec:BINARY...]
# Always the floor, the twin (when its node_modules are installed) and
# bin/thumbd-static (built by scripts/build.sh static) when it exists; without
# arguments, -rounds 3 -runs 10. IMAGES (default none) come
# from scripts/images.sh, which this script does not run; with IMAGES it
# starts dockerd if none runs (scripts/lib/docker.sh) and stops only that one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh

main() {
  local images=() twin=() static=()
  read -r -a images <<<"${IMAGES:-}"
  [ $# -gt 0 ] || set -- -rounds 3 -runs 10
  [ -x bin/thumbd-static ] && static=(static=exec:bin/thumbd-static)
  if [ ${#images[@]} -gt 0 ]; then
    docker_up
    trap docker_down EXIT
  fi
  CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/floor ./bench/cmd/floor
  [ -d bench/twins/node/node_modules ] && twin=(-twin "node bench/twins/node/server.mjs")
  go build -o bin/thumbd-bench ./bench
  bin/thumbd-bench coldstart -floor bin/floor "${twin[@]}" "$@" "${static[@]}" "${images[@]}"
}

main "$@"
