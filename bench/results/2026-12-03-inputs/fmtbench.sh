#!/usr/bin/env bash
# The input formats' bench: a 12 MP photo in each format to a 256x256 WebP
# (cover, q 80), one libvips thread, thumbd's static build against sharp
# 0.35.5 (the twin), three interleaved rounds of 20 thumbnails each.
set -euo pipefail
cd /work/main
for round in 1 2 3; do
  (cd service/internal/thumb && VIPS_CONCURRENCY=1 THUMBD_ENGINE_SOURCES=/tmp/fmtbench THUMBD_ENGINE_FORMATS=webp \
     /tmp/thumb-static.test -test.run '^$' -test.bench 'BenchmarkEngine$' -test.benchtime 20x 2>&1 | grep -E "BenchmarkEngine/" | sed "s/^/round $round thumbd-static /")
  node bench/twins/node/engine-bench.mjs --iterations 20 --formats webp /tmp/fmtbench/photo12.jpg /tmp/fmtbench/photo12.avif /tmp/fmtbench/photo12.tif 2>&1 | grep median | sed "s/^/round $round sharp /"
done
