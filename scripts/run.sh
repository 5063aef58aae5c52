#!/usr/bin/env bash
# Runs thumbd on :8080 (or $PORT) from source, in the foreground, linked
# against the project's libvips 8.16.1 (scripts/build-libvips.sh, the one in
# both images; built once, about 25 CPU-minutes, 15 minutes on 2 cores,
# then cached in /var/cache/thumbd). Extra arguments go to thumbd (e.g.
# -log-level debug).
#
#   scripts/run.sh            bin/thumbd-slim: the images' libvips
#   scripts/run.sh --debian   bin/thumbd: Debian's libvips-dev 8.14.1, no
#                             compile, for quick development only: 8.14.1 has
#                             a worker-thread race that crashed thumbd under
#                             load (docs/hardening.md), and thumbd warns of it.
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  if [ "${1:-}" = --debian ]; then
    shift
    scripts/deps.sh dev
    scripts/build.sh dynamic
    exec bin/thumbd "$@"
  fi
  scripts/build.sh slim   # build-libvips.sh installs what it needs
  exec bin/thumbd-slim "$@"
}

main "$@"
