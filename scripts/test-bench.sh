#!/usr/bin/env bash
# CI for the bench driver: its unit tests, then an end-to-end quick run of the
# default suite (whatever of it can run here) with no timing assertion, then
# checks that the run wrote a results document, a report and charts.
set -euo pipefail
cd "$(dirname "$0")/.."

main() {
  go test ./bench/...
  local out=bench/results/tmp/quick
  rm -rf "$out"
  scripts/bench.sh --quick -out "$out" "$@"
  for f in results.json report.md startup-health.svg; do
    [ -s "$out/$f" ] || { echo "test-bench.sh: $out/$f missing" >&2; return 1; }
  done
  grep -q '"schema": "thumbd-bench/v1"' "$out/results.json" || { echo "test-bench.sh: bad schema" >&2; return 1; }
  grep -q '^## Startup to health' "$out/report.md" || { echo "test-bench.sh: report has no startup table" >&2; return 1; }
  grep -q '"route": "thumb-photo12-webp"' "$out/results.json" || { echo "test-bench.sh: the photo12 WebP route did not run" >&2; return 1; }
  grep -q '"route": "thumb-small-avif"' "$out/results.json" || { echo "test-bench.sh: the AVIF route did not run" >&2; return 1; }
  grep -q '"route": "thumb-animated-webp"' "$out/results.json" || { echo "test-bench.sh: the animated route did not run" >&2; return 1; }
  grep -q '| CPU µs/answer | vs ' "$out/report.md" || { echo "test-bench.sh: report has no CPU per answer" >&2; return 1; }
  grep -q '| small | native cell, reused | ' "$out/report.md" || { echo "test-bench.sh: report has no cell arms" >&2; return 1; }
  grep -q '"name": "thumbd-static-cells"' "$out/results.json" || { echo "test-bench.sh: the cells target is not in the run" >&2; return 1; }
  if grep -q '✗' "$out/report.md"; then
    echo "test-bench.sh: a target failed the contract check:" >&2
    grep '✗' "$out/report.md" >&2
    return 1
  fi
  echo "test-bench.sh: quick bench ran end to end; report in $out/report.md"
}

main "$@"
