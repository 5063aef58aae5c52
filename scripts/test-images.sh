#!/usr/bin/env bash
# CI for the images: builds thumbd:slim and thumbd:scratch (scripts/images.sh)
# and smoke-tests a container of each on a loopback port (started by `bench
# serve`): /health, a real POST /thumbnail of the bench's small source
# (decoded, size checked), /metrics, a bad body answered with a 4xx, `thumbd
# health` inside the container, a non-root user, MALLOC_ARENA_MAX=2, the CA
# certificates for https origins, the licence notices, a GET /thumbnail?url= from a loopback
# origin (bench origin) giving the POST's thumbnail. The
# scratch container runs read-only, with no capabilities and
# no-new-privileges. Then thumbd:scratch with no settings under a 256 MiB
# memory limit, saturated by 500 clients (memory_limit). Stops the dockerd it
# started.
# Usage: scripts/test-images.sh [--no-build]   (as root; --no-build tests the
# thumbd:slim and thumbd:scratch images as they are)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/docker.sh

WORK=$(mktemp -d /tmp/thumbd-test-images.XXXXXX)
export WORK
FAILED=0

pass() { echo "ok   $*" >&2; }
fail() { echo "FAIL $*" >&2; FAILED=1; }

# checks FLAVOUR: the smoke tests of a running container, run by `bench serve`
# with THUMBD_URL and THUMBD_CONTAINER set; exits 1 if one failed.
checks() {
  local flavour=$1 code size entry user pid FAILED=0
  code=$(curl -s -o "$WORK/health.json" -w '%{http_code}' "$THUMBD_URL/health")
  if [ "$code" = 200 ] && grep -q '"ok"' "$WORK/health.json"; then pass "$flavour: /health 200"
  else fail "$flavour: /health answered $code"; fi

  code=$(curl -s -o "$WORK/$flavour.png" -w '%{http_code}' --data-binary "@$WORK/small.jpg" \
    "$THUMBD_URL/thumbnail?w=200&h=150&fit=cover&format=png")
  size=$(vipsheader -f width "$WORK/$flavour.png" 2>/dev/null)x$(vipsheader -f height "$WORK/$flavour.png" 2>/dev/null) || true
  if [ "$code" = 200 ] && [ "$size" = 200x150 ] && vips avg "$WORK/$flavour.png" >/dev/null 2>&1; then
    pass "$flavour: POST /thumbnail 200, decodes to $size PNG ($(stat -c %s "$WORK/$flavour.png") bytes)"
  else fail "$flavour: POST /thumbnail answered $code, image $size"; fi

  code=$(curl -s -o "$WORK/bad.json" -w '%{http_code}' --data-binary 'this is not an image' "$THUMBD_URL/thumbnail")
  if [[ "$code" == 4?? ]] && grep -q '"code"' "$WORK/bad.json"; then pass "$flavour: bad body answered $code $(cat "$WORK/bad.json")"
  else fail "$flavour: bad body answered $code"; fi

  code=$(curl -s -o "$WORK/metrics.txt" -w '%{http_code}' "$THUMBD_URL/metrics")
  if [ "$code" = 200 ] && grep -q '^# TYPE ' "$WORK/metrics.txt"; then
    pass "$flavour: /metrics 200, $(grep -c '^# TYPE ' "$WORK/metrics.txt") metric families"
  else fail "$flavour: /metrics answered $code"; fi

  entry=$(docker inspect -f '{{index .Config.Entrypoint 0}}' "thumbd:$flavour")
  if docker exec "$THUMBD_CONTAINER" "$entry" health; then pass "$flavour: '$entry health' exits 0 in the container"
  else fail "$flavour: '$entry health' failed in the container"; fi

  user=$(docker inspect -f '{{.Config.User}}' "$THUMBD_CONTAINER")
  if [ -n "$user" ] && [ "${user%%:*}" != 0 ] && [ "${user%%:*}" != root ]; then pass "$flavour: runs as user $user"
  else fail "$flavour: runs as root"; fi

  # The CA set https origins are verified against (GET /thumbnail?url=).
  if docker cp "$THUMBD_CONTAINER:/etc/ssl/certs/ca-certificates.crt" "$WORK/ca-$flavour.crt" 2>/dev/null &&
    [ "$(grep -c 'BEGIN CERTIFICATE' "$WORK/ca-$flavour.crt")" -gt 100 ]; then
    pass "$flavour: $(grep -c 'BEGIN CERTIFICATE' "$WORK/ca-$flavour.crt") CA certificates in /etc/ssl/certs/ca-certificates.crt"
  else fail "$flavour: no CA certificates for https origins"; fi

  # The licence notices (THIRD_PARTY_NOTICES.md): the summary, libvips'
  # LGPL text (gzip'ed in the scratch image) and a Debian copyright file.
  if docker cp "$THUMBD_CONTAINER:/usr/share/doc/thumbd" "$WORK/notices-$flavour" 2>/dev/null &&
    grep -q '^# Third-party notices' "$WORK/notices-$flavour/THIRD_PARTY_NOTICES.md" &&
    notice "$WORK/notices-$flavour" built-from-source/vips/LICENSE | grep -q 'LESSER GENERAL PUBLIC' &&
    notice "$WORK/notices-$flavour" debian/libc6.copyright | grep -q 'GNU C Library'; then
    pass "$flavour: licence notices in /usr/share/doc/thumbd ($(find "$WORK/notices-$flavour" -type f | wc -l) files)"
  else fail "$flavour: licence notices missing or unreadable in /usr/share/doc/thumbd"; fi

  # The allocator the images pick (docs/hardening.md), as the process sees it.
  pid=$(docker inspect -f '{{.State.Pid}}' "$THUMBD_CONTAINER")
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'MALLOC_ARENA_MAX=2'; then pass "$flavour: runs with MALLOC_ARENA_MAX=2"
  else fail "$flavour: MALLOC_ARENA_MAX=2 not in the process environment"; fi
  return "$FAILED"
}
# notice ROOT FILE: the text of notice FILE under ROOT, from FILE or its
# gzip'ed FILE.gz, following a "Same text as OTHER." pointer (notices.sh).
notice() {
  local text
  if [ -f "$1/$2" ]; then text=$(cat "$1/$2"); else text=$(zcat "$1/$2.gz" 2>/dev/null); fi || return 1
  if [[ "$text" =~ ^Same\ text\ as\ (.*)\.$ ]]; then notice "$1" "${BASH_REMATCH[1]}"; else echo "$text"; fi
}
export -f checks pass fail notice

# smoke FLAVOUR DOCKER_RUN_ARGS...: a container of thumbd:FLAVOUR on a loopback
# port (bench serve), checked; the container must still run at the end.
smoke() {
  local flavour=$1 args=() a; shift
  for a in "$@"; do args+=("-docker-arg=$a"); done
  bin/thumbd-bench serve -image "thumbd:$flavour" -timeout 30s "${args[@]}" -run "checks $flavour" || FAILED=1
}

# memory_limit: thumbd:scratch with no setting under a 256 MiB limit, 500
# clients for 7 s with the 12 MP photo, then 7 s with a 7000x5000 PNG (114 KB
# of 105 MB of pixels): no OOM kill, never 3 failed liveness probes in a row
# (every 250 ms, 1 s timeout), every request answered, thumbnails of both
# (issue 19; bench memory -check).
memory_limit() {
  bin/thumbd-bench sources "$WORK" photo12 flat7000 >/dev/null
  if bin/thumbd-bench memory -lock "" -image thumbd:scratch -memory 256m -clients 500 -duration 7s \
    -source "$WORK/photo12.jpg,$WORK/flat7000.png" -check >"$WORK/memory.txt" 2>"$WORK/memory.log"; then
    pass "scratch at 256 MiB, 500 clients: $(tr '\n' ' ' <"$WORK/memory.txt")"
  else fail "scratch at 256 MiB, 500 clients: $(cat "$WORK/memory.txt") $(tail -5 "$WORK/memory.log")"; fi
}

main() {
  trap 'docker_down; rm -rf "$WORK"' EXIT
  docker_up
  if [ "${1:-}" = --no-build ]; then scripts/images.sh --sizes-only; else scripts/images.sh slim scratch; fi
  go build -o bin/thumbd-bench ./bench
  bin/thumbd-bench sources "$WORK" small >/dev/null
  smoke slim
  smoke scratch --read-only --cap-drop ALL --security-opt no-new-privileges --user 65532:65532
  # GET /thumbnail?url= from a loopback origin in each image: the same
  # thumbnail as the POST of the same bytes (bench origin checks the ETags).
  for flavour in slim scratch; do
    if bin/thumbd-bench origin -image "thumbd:$flavour" -lock "" -sources small -source-dir "$WORK" -rounds 1 \
      -duration 1s -warmup 0 -clients 2 -server-cpus "" -client-cpus "" >"$WORK/origin.md" 2>"$WORK/origin.log"; then
      pass "$flavour: GET /thumbnail?url= from a loopback origin: $(grep '^| small' "$WORK/origin.md")"
    else fail "$flavour: GET /thumbnail?url=: $(tail -3 "$WORK/origin.log")"; fi
  done
  memory_limit
  if [ "$FAILED" = 1 ]; then echo "test-images: FAILED" >&2; return 1; fi
  echo "test-images: all passed" >&2
}

main "$@"
