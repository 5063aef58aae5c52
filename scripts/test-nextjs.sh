#!/usr/bin/env bash
# The Next.js example (examples/nextjs) for real: builds the site with
# `next` from npm (its lockfile), serves it with `next start`, and renders
# its page in headless Chromium (Debian's package) with thumbd behind the
# loader (examples/nextjs/test/browser.mjs says what it checks). thumbd runs
# the bounded unsigned mode with the site's own sizes and qualities as its
# allow-lists, and a deadline of 30 s: the hero, a 12 MP photo made a
# 1920-wide AVIF, takes about 6 s on a busy 2-core machine, and this test is
# about the integration, not the latency. The page's screenshot and thumbd's
# log is left in $OUT (default: a temporary
# directory, printed).
# Usage: scripts/test-nextjs.sh
set -euo pipefail

main() {
  cd "$(dirname "$0")/.."
  scripts/deps.sh nextjs
  local tmp
  tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  export OUT="${OUT:-$(mktemp -d)}"
  go build -o "$tmp/thumbd" ./service
  go build -o "$tmp/thumbd-bench" ./bench
  "$tmp/thumbd-bench" sources "$tmp/sources" >/dev/null
  local widths qualities
  widths=$(cd examples/nextjs && node -e 'import("./next.config.mjs").then(({default: c}) => console.log([...c.images.imageSizes, ...c.images.deviceSizes].join(",")))')
  qualities=$(cd examples/nextjs && node -e 'import("./next.config.mjs").then(({default: c}) => console.log(c.images.qualities.join(",")))')
  "$tmp/thumbd-bench" serve -log "$OUT/thumbd.log" \
    -env THUMBD_DEADLINE=30s -env "THUMBD_SOURCE=$tmp/sources" -env "THUMBD_ALLOWED_WIDTHS=$widths" -env "THUMBD_ALLOWED_QUALITIES=$qualities" \
    -run "$(declare -f site); site" -- "$tmp/thumbd"
  echo "test-nextjs: the page's screenshots and thumbd's log: $OUT/nextjs-page-*.png, $OUT/thumbd.log"
}

# site builds the example against $THUMBD_URL, serves it on a free loopback
# port and runs the browser test; run inside `bench serve`.
site() {
  cd examples/nextjs
  NEXT_TELEMETRY_DISABLED=1 NEXT_PUBLIC_THUMBD_URL="$THUMBD_URL" npx --no-install next build >/dev/null
  local port pid
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
  # node itself, so that $! is the server (npx would leave it orphaned,
  # holding bench serve's pipe open).
  NEXT_TELEMETRY_DISABLED=1 node node_modules/next/dist/bin/next start -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  pid=$!
  trap "kill $pid 2>/dev/null || true" EXIT
  for _ in $(seq 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null && break
    sleep 0.1
  done
  SITE_URL="http://127.0.0.1:$port" node test/browser.mjs
}

main "$@"
