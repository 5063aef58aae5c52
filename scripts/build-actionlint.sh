#!/usr/bin/env bash
# Builds actionlint, the linter scripts/test.sh checks
# .github/workflows/*.yml with (syntax, expressions, action inputs, and the
# shell of every run: step through shellcheck when one is on PATH). Its
# module graph lives in scripts/actionlint/go.mod as a Go tool dependency,
# apart from the service's go.mod.
#
# Cached as scripts/lib/gotool.sh says (keyed by the tool module's go.mod and
# go.sum); the cold build takes about a minute and holds the build lock. The
# last line on stdout is the binary's path.
# Usage: scripts/build-actionlint.sh
set -euo pipefail

source "$(dirname "$0")/lib/gotool.sh"
build_gotool actionlint github.com/rhysd/actionlint github.com/rhysd/actionlint/cmd/actionlint "about a minute"
