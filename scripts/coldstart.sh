#!/usr/bin/env bash
# Scale from zero, simulated with Docker (`bench coldstart`): for each image,
# N fresh hardened containers (read-only, no capabilities, no-new-privileges,
# user 65532, the manifests' CPU and memory limits), each timed from `docker
# run -d` to the first POST /thumbnail that answers 200; median, min, max and
# stdev per image. Next to them, the same binary as a bare process (the static
# binary copied out of thumbd:scratch): what the container adds. The command
# holds the bench lock while it measures.
# Usage: [IMAGES="thumbd:slim thumbd:scratch"] scripts/coldstart.sh [-runs 10] [coldstart flags]
# The images come from scripts/images.sh; this script builds none. It starts
# dockerd if none runs (scripts/lib/docker.sh) and stops only that one.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh

main() {
  local tmp img id images targets=()
  read -r -a images <<<"${IMAGES:-thumbd:slim thumbd:scratch}"
  docker_up
  tmp="$(mktemp -d)"
  trap "rm -rf -- '$tmp'; docker_down" EXIT
  targets=("${images[@]}")
  for img in "${images[@]}"; do
    [[ "$img" == *:scratch ]] || continue
    id="$(docker create "$img")"
    docker cp "$id:/thumbd" "$tmp/thumbd-scratch" >/dev/null && targets+=("exec:$tmp/thumbd-scratch")
    docker rm "$id" >/dev/null
  done
  go build -o bin/thumbd-bench ./bench
  bin/thumbd-bench coldstart "$@" "${targets[@]}"
}

main "$@"
