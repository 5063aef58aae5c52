#!/usr/bin/env bash
# Saturation, shutdown-under-load and slowloris runs against a real thumbd
# on loopback (bench/cmd/soak), with a summary: requests, statuses, p99,
# slowest answer, /health during the load, peak RSS, and whether anything
# was lost. Exits non-zero when a check fails.
#
#   scripts/soak.sh                 # full: 500 clients x 60 s for glibc malloc,
#                                   # MALLOC_ARENA_MAX=2 and jemalloc; SIGTERM
#                                   # under load; 1000 slow connections (~6 min)
#   scripts/soak.sh --quick         # 100 clients x 10 s, glibc only (~1 min)
#   scripts/soak.sh --debian        # against Debian's libvips 8.14.1 instead
#   scripts/soak.sh --containment   # cells mode: 500 clients x 60 s, the last 20 s a
#                                   # heavy mix of 4000x3000 JPEGs, a random cell
#                                   # killed by SIGSEGV every second (~2 min)
#   scripts/soak.sh --no-build [SOAK FLAGS...]   # e.g. -modes shutdown -clients 200
#
# Tests bin/thumbd-soak-target, built from the tree against the images'
# libvips 8.16.1 (the slim flavour of scripts/build.sh); --debian links
# Debian's 8.14.1, whose worker-thread race crashed thumbd twice in 24 runs
# (docs/hardening.md). The soak holds the bench lock for the whole run
# (timings of others are not disturbed and do not disturb it). Installs
# libjemalloc2 when run as root. Results also go to bench/results/tmp/soak.json.
set -euo pipefail
cd "$(dirname "$0")/.."

main() {
  local build=1 flavour=slim args=()
  for a in "$@"; do
    case "$a" in
      --containment)
        go run ./bench sources bench/results/tmp/sources huge >/dev/null
        args+=(-modes containment -heavy bench/results/tmp/sources/huge.jpg) ;;
      --quick) args+=(-duration 10s -clients 100 -term-after 5s -slow-for 8s -malloc glibc) ;;
      --no-build) build=0 ;;
      --debian) flavour=dynamic ;;
      *) args+=("$a") ;;
    esac
  done
  if [ "$build" = 1 ]; then
    if ! [ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] && [ "$(id -u)" = 0 ]; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libjemalloc2 >/dev/null
    fi
    # A private copy of the binary under test: bin/thumbd is shared with
    # other engineers' builds, which may replace it during a 6-minute run.
    if [ "$flavour" = dynamic ]; then
      scripts/deps.sh dev
      OUT=bin/soak scripts/build.sh dynamic && mv bin/soak/thumbd bin/thumbd-soak-target
    else
      OUT=bin/soak scripts/build.sh slim && mv bin/soak/thumbd-slim bin/thumbd-soak-target
    fi
    go build -o bin/thumbd-soak ./bench/cmd/soak
  fi
  # 1000 slow connections need about 1100 descriptors in each process.
  ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
  mkdir -p bench/results/tmp
  exec bin/thumbd-soak -bin bin/thumbd-soak-target -json bench/results/tmp/soak.json "${args[@]}"
}

main "$@"
