#!/usr/bin/env bash
# Builds the Jaeger v2 binary (OTLP in, query API and UI on 16686) for
# looking at thumbd's traces by hand (docs/observability.md); the tracing
# test uses a lighter collector (scripts/build-otelcol.sh). Its
# module graph (hundreds of modules: the OpenTelemetry collector, storage
# clients) lives in scripts/jaeger/go.mod as a Go tool dependency, apart from
# the service's own go.mod; Jaeger's replace directives are why it cannot be
# had with `go install pkg@version`.
#
# Cached as scripts/lib/gotool.sh says (keyed by the tool module's go.mod and
# go.sum); the cold build takes minutes and holds the build lock. The last
# line on stdout is the binary's path.
# Usage: scripts/build-jaeger.sh
set -euo pipefail

source "$(dirname "$0")/lib/gotool.sh"
build_gotool jaeger github.com/jaegertracing/jaeger github.com/jaegertracing/jaeger/cmd/jaeger minutes
