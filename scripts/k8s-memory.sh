#!/usr/bin/env bash
# Peak memory of one thumbd container under thumbnail load at the Kubernetes
# manifests' settings: --cpus 2 --memory 512m, THUMBD_CONCURRENCY=2,
# THUMBD_QUEUE=8, and 10 clients (2 slots + a full queue) POSTing SOURCE for
# SECONDS. Prints idle VmRSS, peak VmHWM, the cgroup's peak and the answers by
# status: the figures the memory request and limit in k8s/base are sized from.
# Holds /tmp/thumbd-bench.lock; starts dockerd if none runs and stops only
# that one (scripts/lib/docker.sh). Sources: scripts/make-sources.sh DIR.
# Usage: scripts/k8s-memory.sh IMAGE SOURCE [SECONDS]   e.g. thumbd:scratch /tmp/src/huge.jpg 15
set -euo pipefail

die() { echo "k8s-memory.sh: $*" >&2; exit 1; }

measure() {
  local img="$1" src="$2" secs="$3" id url pid idle end codes hwm cg
  id="$(docker run -d --read-only --cap-drop ALL --security-opt no-new-privileges --user 65532:65532 \
    --cpus 2 --memory 512m -e THUMBD_CONCURRENCY=2 -e THUMBD_QUEUE=8 -p 127.0.0.1::8080 "$img")"
  trap "docker rm -f '$id' >/dev/null; trap - RETURN" RETURN
  url="http://$(docker port "$id" 8080/tcp | head -n1)"
  wait_ready "$url" 10 || true
  pid="$(docker inspect -f '{{.State.Pid}}' "$id")"
  idle="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")"
  end=$(($(date +%s) + secs))
  codes="$(mktemp)"
  local clients=()
  for _ in $(seq 10); do
    while [ "$(date +%s)" -lt "$end" ]; do
      curl -s -o /dev/null -w '%{http_code}\n' --data-binary @"$src" "$url/thumbnail?w=256&h=256" >>"$codes"
    done &
    clients+=($!)
  done
  # Only the clients: a dockerd that docker_up started is a child too.
  wait "${clients[@]}"
  hwm="$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")"
  cg="$(cat "/sys/fs/cgroup/memory/docker/$id/memory.max_usage_in_bytes" 2>/dev/null \
    || cat "/sys/fs/cgroup/system.slice/docker-$id.scope/memory.peak" 2>/dev/null || echo 0)"
  echo "$img $(basename "$src") ${secs}s: idle VmRSS $((idle / 1024)) MB, peak VmHWM $((hwm / 1024)) MB," \
    "cgroup peak $((cg / 1048576)) MiB, OOMKilled $(docker inspect -f '{{.State.OOMKilled}}' "$id");" \
    "answers: $(sort "$codes" | uniq -c | awk '{printf "%s x %s  ", $1, $2}')"
  rm -f "$codes"
}

main() {
  [ $# -ge 2 ] || die "usage: scripts/k8s-memory.sh IMAGE SOURCE [SECONDS]"
  [ -r "$2" ] || die "cannot read $2"
  # shellcheck source=lib/docker.sh
  source "$(dirname "$0")/lib/docker.sh"
  source "$(dirname "$0")/lib/serve.sh"
  docker_up || die "no Docker daemon"
  trap docker_down EXIT
  docker image inspect "$1" >/dev/null 2>&1 || die "image $1 not found: build it with scripts/images.sh"
  exec 9>/tmp/thumbd-bench.lock
  flock 9
  measure "$1" "$2" "${3:-15}"
}

main "$@"
