#!/usr/bin/env bash
# Builds the Jaeger v2 binary (OTLP in, query API and UI on 16686) that the
# tracing end-to-end test (service/tracing_jaeger_test.go) exports to. Its
# module graph (hundreds of modules: the OpenTelemetry collector, storage
# clients) lives in scripts/jaeger/go.mod as a Go tool dependency, apart from
# the service's own go.mod; Jaeger's replace directives are why it cannot be
# had with `go install pkg@version`.
#
# The binary is cached in $THUMBD_CACHE (default /var/cache/thumbd) under a
# name keyed by the tool module's go.mod and go.sum, so a version bump builds
# again and every other run reuses it. The cold build takes minutes and holds
# the build lock (/tmp/thumbd-build.lock). The last line on stdout is the
# binary's path.
# Usage: scripts/build-jaeger.sh
set -euo pipefail

readonly CACHE="${THUMBD_CACHE:-/var/cache/thumbd}"

main() {
  local here key bin tmp
  here="$(cd "$(dirname "$0")" && pwd)/jaeger"
  key=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)
  bin="$CACHE/jaeger-$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2 }' "$here/go.mod")-$key/jaeger"
  if [ ! -x "$bin" ]; then
    mkdir -p "$CACHE"
    exec 9>/tmp/thumbd-build.lock
    flock 9
    if [ ! -x "$bin" ]; then
      echo "build-jaeger: building $bin (minutes, once)" >&2
      tmp=$(mktemp -d "$CACHE/jaeger-build.XXXXXX")
      (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
      mkdir -p "$(dirname "$bin")"
      mv "$tmp/jaeger" "$bin"
      rmdir "$tmp"
    fi
    exec 9>&-
  fi
  echo "$bin"
}

main "$@"
