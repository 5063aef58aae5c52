#!/usr/bin/env bash
# Validates the Kubernetes and Knative manifests without a cluster: strict
# decoding into k8s.io/api and Knative types, kustomize rendering, and the
# cross-checks against the service (k8s/validate, a Go module of its own).
# It builds thumbd once: the settings the manifests may set come from the
# service's config code (`thumbd settings -json`, passed in as
# THUMBD_SETTINGS_JSON), and the memory check starts the binary (THUMBD_BIN)
# under each manifest's memory limit to read its memory plan. The Helm
# chart (k8s/chart) is linted and rendered by helm v4, built once by
# scripts/build-helm.sh (passed in as THUMBD_HELM), and its renderings are
# held to the same checks and to the kustomize overlays' pods.
# Usage: scripts/test-k8s.sh [go test flags...]   e.g. -v, -run Knative
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  local tmp
  tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  go build -o "$tmp/thumbd" ./service
  "$tmp/thumbd" settings -json >"$tmp/settings.json"
  local helm
  helm=$(scripts/build-helm.sh | tail -1)
  # Built as scripts/lib/gotool.sh builds helm (CGO_ENABLED=0, -trimpath):
  # the same flags share the build cache, so the Kubernetes API packages
  # helm compiled (k8s.io/api alone is minutes cold) are not compiled again.
  (cd k8s/validate && THUMBD_HELM="$helm" THUMBD_BIN="$tmp/thumbd" THUMBD_SETTINGS_JSON="$tmp/settings.json" CGO_ENABLED=0 go test -trimpath "$@" ./...)
}

main "$@"
