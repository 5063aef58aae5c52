#!/usr/bin/env bash
# Runs thumbd on :8080 (or $PORT) from source: installs Debian's libvips-dev
# when it is missing, builds bin/thumbd and runs it in the foreground.
# Extra arguments go to thumbd (e.g. -log-level debug). Usage: scripts/run.sh
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  scripts/deps.sh dev
  go build -o bin/thumbd ./service
  exec bin/thumbd "$@"
}

main "$@"
