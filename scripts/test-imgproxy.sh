#!/usr/bin/env bash
# imgproxy's official Node client against thumbd's imgproxy endpoint
# (THUMBD_IMGPROXY=true, docs/imgproxy.md): examples/imgproxy/test builds
# URLs with @imgproxy/imgproxy-node (pinned in its lockfile) and checks
# thumbd's answers, once against an unsigned thumbd and once against one
# signed with a fresh key and salt, both on the bench's sources.
# Usage: scripts/test-imgproxy.sh
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  scripts/deps.sh imgproxy
  local tmp key salt
  tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  go build -o "$tmp/thumbd" ./service
  go build -o "$tmp/thumbd-bench" ./bench
  "$tmp/thumbd-bench" sources "$tmp/sources" >/dev/null
  local env=(-env THUMBD_IMGPROXY=true -env "THUMBD_SOURCE=$tmp/sources"
    -env 'THUMBD_IMGPROXY_PRESETS=default=q:80,thumb=rs:fill:128:128/f:png')
  local run="cd examples/imgproxy && node --test test/"
  "$tmp/thumbd-bench" serve "${env[@]}" -run "$run" -- "$tmp/thumbd"
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  salt=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  "$tmp/thumbd-bench" serve "${env[@]}" -env "THUMBD_IMGPROXY_KEY=$key" -env "THUMBD_IMGPROXY_SALT=$salt" \
    -run "IMGPROXY_KEY=$key IMGPROXY_SALT=$salt; export IMGPROXY_KEY IMGPROXY_SALT; $run" -- "$tmp/thumbd"
}

main "$@"
