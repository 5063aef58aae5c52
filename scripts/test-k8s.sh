#!/usr/bin/env bash
# Validates the Kubernetes and Knative manifests without a cluster: strict
# decoding into k8s.io/api and Knative types, kustomize rendering, and the
# cross-checks against the service (k8s/validate, a Go module of its own).
# It builds thumbd once: the settings the manifests may set come from the
# service's config code (`thumbd settings -json`, passed in as
# THUMBD_SETTINGS_JSON), and the memory check starts the binary (THUMBD_BIN)
# under each manifest's memory limit to read its memory plan.
# Usage: scripts/test-k8s.sh [go test flags...]   e.g. -v, -run Knative
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  local tmp
  tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  go build -o "$tmp/thumbd" ./service
  "$tmp/thumbd" settings -json >"$tmp/settings.json"
  (cd k8s/validate && THUMBD_BIN="$tmp/thumbd" THUMBD_SETTINGS_JSON="$tmp/settings.json" go test "$@" ./...)
}

main "$@"
