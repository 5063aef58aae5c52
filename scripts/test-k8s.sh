#!/usr/bin/env bash
# Validates the Kubernetes and Knative manifests without a cluster: strict
# decoding into k8s.io/api and Knative types, kustomize rendering, and the
# cross-checks against the service (k8s/validate, a Go module of its own).
# The settings the manifests may set come from the service's config code:
# `thumbd settings -json`, passed in as THUMBD_SETTINGS_JSON.
# Usage: scripts/test-k8s.sh [go test flags...]   e.g. -v, -run Knative
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  local settings
  settings=$(mktemp)
  trap "rm -f '$settings'" EXIT
  go run ./service settings -json >"$settings"
  (cd k8s/validate && THUMBD_SETTINGS_JSON="$settings" go test "$@" ./...)
}

main "$@"
