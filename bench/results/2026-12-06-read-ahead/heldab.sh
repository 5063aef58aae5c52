#!/usr/bin/env bash
# heldab.sh: bench peer's settings, 10 clients, SRC; thumbd before (m) and
# after (h) the held-sources bound, and imgproxy; ROUNDS interleaved.
set -euo pipefail
SRC=${SRC:-photo12.tif}; ROUNDS=${ROUNDS:-3}; S=/tmp/peer47
P="/insecure/rs:fill:256:256/f:webp/plain/local:///$SRC"
common=(THUMBD_SOURCE=$S THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn)
env "${common[@]}" PORT=18811 taskset -c 1 /tmp/seq47/m/thumbd-static >/dev/null 2>&1 & a=$!
env "${common[@]}" PORT=18812 taskset -c 1 /tmp/seq47/h/thumbd-static >/dev/null 2>&1 & b=$!
IMGPROXY_BIND=127.0.0.1:18813 IMGPROXY_LOCAL_FILESYSTEM_ROOT=$S IMGPROXY_WORKERS=1 IMGPROXY_MAX_SRC_FILE_SIZE=67108864 IMGPROXY_TIMEOUT=60 IMGPROXY_LOG_LEVEL=warn taskset -c 1 /var/cache/thumbd/imgproxy-4.0.12-2d8cc13f120d/imgproxy >/dev/null 2>&1 & c=$!
trap 'kill $a $b $c 2>/dev/null' EXIT
sleep 3
for p in 18811 18812 18813; do curl -sf -o /dev/null "http://127.0.0.1:$p$P"; done
for r in $(seq $ROUNDS); do
  for t in before:18811 held:18812 imgproxy:18813; do
    echo "$SRC $r ${t%%:*} $(taskset -c 0 /tmp/hey -z 8s -c 10 "http://127.0.0.1:${t#*:}$P" | awk '/Requests\/sec/ {print $2}')"
  done
done
echo "$SRC rss before $(awk '/VmHWM/ {print $2}' /proc/$a/status) kB, held $(awk '/VmHWM/ {print $2}' /proc/$b/status) kB"
