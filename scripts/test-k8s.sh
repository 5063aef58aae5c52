#!/usr/bin/env bash
# Validates the Kubernetes and Knative manifests without a cluster: strict
# decoding into k8s.io/api and Knative types, kustomize rendering, and the
# cross-checks against the service (k8s/validate, a Go module of its own).
# Usage: scripts/test-k8s.sh [go test flags...]   e.g. -v, -run Knative
set -euo pipefail

main() {
  cd "$(dirname "$0")/../k8s/validate"
  go test "$@" ./...
}

main "$@"
