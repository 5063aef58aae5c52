#!/usr/bin/env bash
# budgetab.sh: TIFF (or $SRC) at 10 clients, imgproxy and thumbd with bench
# peer's settings, thumbd's source budget default ("ahead") or 2 sources
# ("two"), interleaved rounds.
set -euo pipefail
SRC=${SRC:-photo12.tif}; ROUNDS=${ROUNDS:-3}; S=/tmp/peer47
P="/insecure/rs:fill:256:256/f:webp/plain/local:///$SRC"
common=(THUMBD_SOURCE=$S THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn)
env "${common[@]}" PORT=18801 taskset -c 1 ${BIN:-/tmp/seq47/m/thumbd-static} >/dev/null 2>&1 & a=$!
env "${common[@]}" PORT=18802 THUMBD_SOURCE_BUDGET=${TWO:-67108864} taskset -c 1 ${BIN:-/tmp/seq47/m/thumbd-static} >/dev/null 2>&1 & b=$!
IMGPROXY_BIND=127.0.0.1:18803 IMGPROXY_LOCAL_FILESYSTEM_ROOT=$S IMGPROXY_WORKERS=1 IMGPROXY_MAX_SRC_FILE_SIZE=67108864 IMGPROXY_TIMEOUT=60 IMGPROXY_LOG_LEVEL=warn taskset -c 1 /var/cache/thumbd/imgproxy-4.0.12-2d8cc13f120d/imgproxy >/dev/null 2>&1 & c=$!
trap 'kill $a $b $c 2>/dev/null' EXIT
sleep 3
for p in 18801 18802 18803; do curl -sf -o /dev/null "http://127.0.0.1:$p$P"; done
for r in $(seq $ROUNDS); do
  for t in ahead:18801 two:18802 imgproxy:18803; do
    echo "$r ${t%%:*} $(taskset -c 0 /tmp/hey -z 8s -c 10 "http://127.0.0.1:${t#*:}$P" | awk '/Requests\/sec/ {print $2}')"
  done
done
