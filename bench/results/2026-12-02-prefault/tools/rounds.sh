#!/usr/bin/env bash
# rounds.sh ROUNDS: issue 29's overload table ROUNDS times over
# (bench/results/2026-12-02-overload3/tools/rerun.sh, each round in its own
# $OUT/rN), rows interleaved by round, then one table of each row's median
# (summary.py). ONLY, CONTAINERS, IMAGE, BUDGET pass through to rerun.sh.
#   flock /tmp/thumbd-heavy.lock bench/results/2026-12-02-prefault/tools/rounds.sh 3
set -euo pipefail
cd "$(dirname "$0")/../../../.."
T=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/ov-rounds}
rounds=${1:-3}
mkdir -p "$OUT"
for r in $(seq 1 "$rounds"); do
  W=$OUT/r$r bench/results/2026-12-02-overload3/tools/rerun.sh >/dev/null
done
python3 "$T/summary.py" "$OUT"/r*/summary.md
