#!/usr/bin/env bash
# Builds the OpenTelemetry Collector that the tracing end-to-end test
# (service/tracing_collector_test.go) exports to: the OTLP receiver and the
# OTLP/HTTP exporter only (scripts/otelcol/main.go). Its module graph (the
# collector's core) lives in scripts/otelcol/go.mod, apart from the
# service's own go.mod.
#
# Cached as scripts/lib/gotool.sh says (keyed by the tool module's go.mod,
# go.sum and main.go); the cold build takes about 2 minutes on 2 idle cores
# (Jaeger v2's, which the test used before, about 7) and holds the build
# lock. The last line on stdout is the binary's path.
# Usage: scripts/build-otelcol.sh
set -euo pipefail

source "$(dirname "$0")/lib/gotool.sh"
build_gotool otelcol go.opentelemetry.io/collector/otelcol . "about 2 minutes"
