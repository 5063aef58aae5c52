#!/usr/bin/env bash
# Scale from zero, simulated with Docker: for each image, N fresh hardened
# containers (read-only, no capabilities, no-new-privileges, user 65532, the
# manifests' CPU and memory limits), each timed from `docker run -d` to the
# first POST /thumbnail that answers 200; median, min, max and stdev per image.
# Next to them, the same binary as a bare process (the static binary copied out
# of thumbd:scratch, run as exec:...): what the container adds.
# The program is k8s/validate/cmd/coldstart; this script builds it, makes a
# small photo-like JPEG (scripts/make-sources.sh, if `vips` is there) and
# holds /tmp/thumbd-bench.lock while measuring.
# Usage: [IMAGES="thumbd:slim thumbd:scratch"] scripts/coldstart.sh [-runs 10] [coldstart flags]
# The images come from scripts/images.sh; this script builds none. It starts
# dockerd if none runs (scripts/lib/docker.sh) and stops only that one.
set -euo pipefail

die() { echo "coldstart.sh: $*" >&2; exit 1; }

main() {
  local repo tmp img id images targets=() source=()
  repo="$(cd "$(dirname "$0")/.." && pwd)"
  read -r -a images <<<"${IMAGES:-thumbd:slim thumbd:scratch}"

  # shellcheck source=lib/docker.sh
  source "$repo/scripts/lib/docker.sh"
  docker_up || die "no Docker daemon"
  for img in "${images[@]}"; do
    docker image inspect "$img" >/dev/null 2>&1 || die "image $img not found: build it with scripts/images.sh"
  done

  tmp="$(mktemp -d)"
  trap "rm -rf -- '$tmp'; docker_down" EXIT
  (cd "$repo/k8s/validate" && go build -o "$tmp/coldstart" ./cmd/coldstart)
  if command -v vips >/dev/null && "$repo/scripts/make-sources.sh" "$tmp/sources" >/dev/null 2>&1; then
    source=(-source "$tmp/sources/small.jpg")
  fi
  targets=("${images[@]}")
  for img in "${images[@]}"; do
    [[ "$img" == *:scratch ]] || continue
    id="$(docker create "$img")"
    docker cp "$id:/thumbd" "$tmp/thumbd-scratch" >/dev/null && targets+=("exec:$tmp/thumbd-scratch")
    docker rm "$id" >/dev/null
  done
  flock /tmp/thumbd-bench.lock "$tmp/coldstart" "${source[@]}" "$@" "${targets[@]}"
}

main "$@"
