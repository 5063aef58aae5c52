#!/bin/bash
# usage: cpu.sh thumbd|imgproxy ext n
who=$1 ext=$2 n=${3:-8}
if [ $who = thumbd ]; then
  env THUMBD_SOURCE=/tmp/peer THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn PORT=8191 $EXTRA taskset -c 1 ${BIN:-/tmp/st/S2/thumbd-static} > /tmp/pf_srv.log 2>&1 &
  health=/ready; port=8191
else
  env IMGPROXY_LOCAL_FILESYSTEM_ROOT=/tmp/peer IMGPROXY_WORKERS=1 IMGPROXY_MAX_SRC_FILE_SIZE=67108864 IMGPROXY_TIMEOUT=60 IMGPROXY_LOG_LEVEL=warn IMGPROXY_BIND=127.0.0.1:8192 $EXTRA taskset -c 1 /work/tmp/imgproxy-bin > /tmp/pf_srv.log 2>&1 &
  health=/health; port=8192
fi
pid=$!
for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$port$health && break; sleep 0.1; done
url=http://127.0.0.1:$port/insecure/${OPTS:-rs:fill:256:256/f:webp}/plain/local:///${SRC:-photo12.$ext}
for i in 1 2 3; do curl -sf -o /dev/null $url; done
perf record -F 4000 -g -p $pid -o /tmp/cpu_$who.data -- bash -c "for i in \$(seq $n); do curl -sf -o /dev/null $url; done" 2>/dev/null >/dev/null
kill $pid; wait $pid 2>/dev/null
perf report -i /tmp/cpu_$who.data --no-children --stdio --sort dso,sym 2>/dev/null | grep "%" | grep -v "^#" | grep -v "\-\-" | head -${TOP:-25}
