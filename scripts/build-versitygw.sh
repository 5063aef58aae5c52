#!/usr/bin/env bash
# Builds versitygw (github.com/versity/versitygw, Apache-2.0): the real S3
# server that the object storage tests and `bench storage` start on loopback
# (internal/s3test). Its module graph (the AWS and Azure SDKs among others)
# lives in scripts/versitygw/go.mod as a Go tool dependency, apart from the
# service's own go.mod, so none of it reaches thumbd's.
#
# Cached as scripts/lib/gotool.sh says (keyed by the tool module's go.mod and
# go.sum); the cold build takes about 2 minutes on 2 idle cores (18 on a
# machine shared by five builds) and holds the build lock. The last line on
# stdout is the binary's path.
# Usage: scripts/build-versitygw.sh
set -euo pipefail

source "$(dirname "$0")/lib/gotool.sh"
build_gotool versitygw github.com/versity/versitygw github.com/versity/versitygw/cmd/versitygw "about 2 minutes"
