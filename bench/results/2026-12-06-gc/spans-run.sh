#!/bin/bash
# spans of 40 sequential photo12 uploads (one keep-alive curl) to /tmp/st/G/thumbd-static
cd /tmp/st/otlp
./otlp > spans-$1.txt 2>&1 &
OP=$!
sleep 0.5
(env PORT=8096 THUMBD_MERGE=false THUMBD_LOG_LEVEL=warn OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_BSP_SCHEDULE_DELAY=200 taskset -c 1 /tmp/st/G/thumbd-static > thumbd-$1.log 2>&1 &)
sleep 1.5
U='http://127.0.0.1:8096/thumbnail?w=256&h=256&format=jpeg'; args=""; for i in $(seq 40); do args="$args -o /dev/null $U"; done
taskset -c 0 curl -s -H 'Expect:' -H 'Content-Type: image/jpeg' --data-binary @/tmp/seq/photo12.jpg $args
sleep 1.5
pkill -f 'st/G/thumbd-static'
sleep 0.5
kill -INT $OP; wait $OP
grep -E "POST|engine|source|decode|encode" spans-$1.txt
