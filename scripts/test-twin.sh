#!/usr/bin/env bash
# Installs the Node twin's pinned dependencies (npm ci from its lockfile) and
# runs its contract tests with Node's built-in test runner. Usage:
#   scripts/test-twin.sh [extra node --test arguments]...
set -euo pipefail

main() {
  local root
  root="$(cd "$(dirname "$0")/.." && pwd)"
  "$root/scripts/deps.sh" node
  cd "$root/bench/twins/node"
  node --test "$@"
}

main "$@"
