#!/usr/bin/env bash
# CI for the images: builds thumbd:slim and thumbd:scratch (scripts/images.sh)
# and smoke-tests a container of each on a loopback port: /health, a real
# POST /thumbnail (decoded, size checked), /metrics, a bad body answered with
# a 4xx, `thumbd health` inside the container. The scratch container runs
# read-only, with no capabilities, no-new-privileges and a non-root user.
# Stops the dockerd it started.
# Usage: scripts/test-images.sh [--no-build]   (as root; --no-build tests the
# thumbd:slim and thumbd:scratch images as they are)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh
source scripts/lib/serve.sh

WORK=$(mktemp -d /tmp/thumbd-test-images.XXXXXX)
CONTAINERS=()
FAILED=0

cleanup() {
  local c
  for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  docker_down
  rm -rf "$WORK"
}

fail() { echo "FAIL $*" >&2; FAILED=1; }
pass() { echo "ok   $*" >&2; }

# make_source FILE: a 400x300 photo-like JPEG (Perlin noise), made with the host's vips.
make_source() {
  command -v vips >/dev/null || scripts/deps.sh dev
  (cd "$WORK" && vips perlin p.v 400 300 --cell-size 50 --seed 3 \
    && vips linear p.v r.v 90 128 --uchar && vips linear p.v g.v 50 90 --uchar \
    && vips bandjoin "r.v g.v r.v" rgb.v && vips copy rgb.v srgb.v --interpretation srgb \
    && vips jpegsave srgb.v "$1" --Q 80)
}

# smoke FLAVOUR DOCKER_RUN_ARGS...: runs thumbd:FLAVOUR and checks it; prints
# the time from `docker run` to the first /health 200.
smoke() {
  local flavour=$1; shift
  local name="thumbd-smoke-$flavour-$$" port start code t0 t1
  CONTAINERS+=("$name")
  t0=$(date +%s%N)
  docker run -d --name "$name" -p 127.0.0.1::8080 "$@" "thumbd:$flavour" >/dev/null
  port=$(docker port "$name" 8080/tcp | head -1 | sed 's/.*://')
  local base="http://127.0.0.1:$port"
  for _ in $(seq 1 500); do
    code=$(curl -s -o "$WORK/health.json" -w '%{http_code}' "$base/health" 2>/dev/null) || true
    [ "$code" = 200 ] && break
    sleep 0.01
  done
  t1=$(date +%s%N)
  if [ "$code" = 200 ] && grep -q '"ok"' "$WORK/health.json"; then
    pass "$flavour: /health 200 ($(( (t1 - t0) / 1000000 )) ms from docker run)"
  else
    fail "$flavour: /health answered $code"; docker logs "$name" >&2 || true; return 0
  fi

  wait_ready "$base" 5 || true
  code=$(curl -s -o "$WORK/$flavour.png" -w '%{http_code}' --data-binary "@$WORK/src.jpg" \
    "$base/thumbnail?w=200&h=150&fit=cover&format=png")
  local size
  size=$(vipsheader -f width "$WORK/$flavour.png" 2>/dev/null)x$(vipsheader -f height "$WORK/$flavour.png" 2>/dev/null) || true
  if [ "$code" = 200 ] && [ "$size" = 200x150 ] && vips avg "$WORK/$flavour.png" >/dev/null 2>&1; then
    pass "$flavour: POST /thumbnail 200, decodes to $size PNG ($(stat -c %s "$WORK/$flavour.png") bytes)"
  else
    fail "$flavour: POST /thumbnail answered $code, image $size"
  fi

  code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' --data-binary 'this is not an image' "$base/thumbnail")
  if [[ "$code" == 4?? ]] && grep -q '"code"' "$WORK/bad.json"; then
    pass "$flavour: bad body answered $code $(cat "$WORK/bad.json")"
  else
    fail "$flavour: bad body answered $code"
  fi

  code=$(curl -s -o "$WORK/metrics.txt" -w '%{http_code}' "$base/metrics")
  if [ "$code" = 200 ] && grep -q '^# TYPE ' "$WORK/metrics.txt"; then
    pass "$flavour: /metrics 200, $(grep -c '^# TYPE ' "$WORK/metrics.txt") metric families"
  else
    fail "$flavour: /metrics answered $code"
  fi

  local entry; entry=$(docker inspect -f '{{index .Config.Entrypoint 0}}' "thumbd:$flavour")
  if docker exec "$name" "$entry" health; then pass "$flavour: '$entry health' exits 0 in the container"
  else fail "$flavour: '$entry health' failed in the container"; fi

  local user; user=$(docker inspect -f '{{.Config.User}}' "$name")
  if [ -n "$user" ] && [ "${user%%:*}" != 0 ] && [ "${user%%:*}" != root ]; then pass "$flavour: runs as user $user"
  else fail "$flavour: runs as root"; fi

  # The allocator the images pick (docs/hardening.md), as the process sees it.
  local pid; pid=$(docker inspect -f '{{.State.Pid}}' "$name")
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'MALLOC_ARENA_MAX=2'; then pass "$flavour: runs with MALLOC_ARENA_MAX=2"
  else fail "$flavour: MALLOC_ARENA_MAX=2 not in the process environment"; fi

  [ "$(docker inspect -f '{{.State.Running}}' "$name")" = true ] || fail "$flavour: container exited"
}

main() {
  trap cleanup EXIT
  docker_up
  if [ "${1:-}" = --no-build ]; then scripts/images.sh --sizes-only; else scripts/images.sh slim scratch; fi
  make_source "$WORK/src.jpg"
  smoke slim
  smoke scratch --read-only --cap-drop ALL --security-opt no-new-privileges --user 65532:65532
  if [ "$FAILED" = 1 ]; then echo "test-images: FAILED" >&2; return 1; fi
  echo "test-images: all passed" >&2
}

main "$@"
