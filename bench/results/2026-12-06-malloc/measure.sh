#!/bin/bash
# One server at a time, pinned to CPU 1, 3 warm-up requests, then N
# sequential curls of /insecure/$OPTS/plain/local:///$SRC under perf:
#   measure.sh stat   thumbd|imgproxy EXT [N]   page faults, CPU and the median time
#   measure.sh cpu    thumbd|imgproxy EXT [N]   perf record -F 4000 -g, the top symbols
#   measure.sh faults thumbd EXT [N]            perf record -e page-faults -c 1 (every fault), by symbol
# EXTRA: more environment for the server (GLIBC_TUNABLES=...); BIN: thumbd's
# binary (a symbolised build for cpu and faults); OPTS (rs:fill:256:256/f:webp)
# and SRC (photo12.EXT) the URL's.
mode=$1 who=$2 ext=$3 n=${4:-10}
if [ "$who" = thumbd ]; then
  env THUMBD_SOURCE=/tmp/peer THUMBD_IMGPROXY=true THUMBD_MERGE=false THUMBD_CONCURRENCY=1 THUMBD_MAX_BODY_BYTES=67108864 \
    THUMBD_DEADLINE=60s THUMBD_WRITE_TIMEOUT=90s THUMBD_LOG_LEVEL=warn PORT=8191 $EXTRA taskset -c 1 ${BIN:-bin/thumbd-static} >/tmp/measure-srv.log 2>&1 &
  health=/ready port=8191
else
  env IMGPROXY_LOCAL_FILESYSTEM_ROOT=/tmp/peer IMGPROXY_WORKERS=1 IMGPROXY_MAX_SRC_FILE_SIZE=67108864 IMGPROXY_TIMEOUT=60 \
    IMGPROXY_LOG_LEVEL=warn IMGPROXY_BIND=127.0.0.1:8192 $EXTRA taskset -c 1 ${IMGPROXY_BIN:-/work/tmp/imgproxy-bin} >/tmp/measure-srv.log 2>&1 &
  health=/health port=8192
fi
pid=$!
for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$port$health && break; sleep 0.1; done
url=http://127.0.0.1:$port/insecure/${OPTS:-rs:fill:256:256/f:webp}/plain/local:///${SRC:-photo12.$ext}
for i in 1 2 3; do curl -sf -o /dev/null "$url"; done
load="for i in \$(seq $n); do curl -sf -o /dev/null -w '%{time_total}\n' '$url'; done"
case $mode in
  stat) perf stat -e task-clock,page-faults -p $pid -o /tmp/measure-stat.txt -- bash -c "$load" >/tmp/measure-times.txt ;;
  cpu) perf record -F 4000 -g -p $pid -o /tmp/measure.data -- bash -c "$load" >/dev/null 2>&1 ;;
  faults) perf record -e page-faults -c 1 -p $pid -o /tmp/measure.data -- bash -c "$load" >/dev/null 2>&1 ;;
esac
kill $pid; wait $pid 2>/dev/null
case $mode in
  stat) echo "$who $ext: $(grep -E 'page-faults|task-clock' /tmp/measure-stat.txt | awk '{print $1, $2}' | tr '\n' ' ')" \
    "median_s=$(sort -n /tmp/measure-times.txt | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')" ;;
  *) perf report -i /tmp/measure.data --no-children --stdio --sort dso,sym 2>/dev/null | grep "%" | grep -v "^#" | head -25 ;;
esac
