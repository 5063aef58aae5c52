#!/bin/bash
# usage: rec.sh ext n  -> perf record page faults of thumbd S
ext=$1 n=${2:-5}
env THUMBD_SOURCE=/tmp/peer THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn PORT=8191 $EXTRA taskset -c 1 ${BIN:-/tmp/st/S/thumbd-static} > /tmp/pf_srv.log 2>&1 &
pid=$!
for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:8191/ready && break; sleep 0.1; done
url=http://127.0.0.1:8191/insecure/rs:fill:256:256/f:webp/plain/local:///photo12.$ext
for i in 1 2 3; do curl -sf -o /dev/null $url; done
perf record -e page-faults -c 1 -p $pid -o /tmp/pf_$ext.data -- bash -c "for i in \$(seq $n); do curl -sf -o /dev/null $url; done" 2>/dev/null
kill $pid; wait $pid 2>/dev/null
perf report -i /tmp/pf_$ext.data --no-children --stdio -g caller,0.5,callee --percent-limit 3 2>/dev/null | grep -v "^$" | head -120
