#!/usr/bin/env bash
# Builds the helm v4 binary that the chart's tests (scripts/test-k8s.sh,
# k8s/validate's chart tests) run `helm lint` and `helm template` with. Its
# module graph (client-go, the Kubernetes API machinery, oras) lives in
# scripts/helm/go.mod as a Go tool dependency, apart from the service's own
# go.mod, so the service never links what only a test renders with.
#
# Cached as scripts/lib/gotool.sh says (keyed by the tool module's go.mod and
# go.sum); the cold build takes a few minutes and holds the build lock. The
# last line on stdout is the binary's path.
# Usage: scripts/build-helm.sh
set -euo pipefail

source "$(dirname "$0")/lib/gotool.sh"
build_gotool helm helm.sh/helm/v4 helm.sh/helm/v4/cmd/helm "a few minutes"
