#!/bin/bash
# one start under perf, to the first thumbnail
i=$1; BIN=${BIN:-/tmp/sym/thumbd-static}
PORT=18555 perf record -q -k CLOCK_REALTIME -F 20000 -o /tmp/prof/p$i.data -- taskset -c 1 $BIN >/tmp/prof/log$i.txt 2>&1 &
until curl -sf -o /dev/null -X POST --data-binary @/tmp/srcs/small.jpg "http://127.0.0.1:18555/thumbnail?w=256&h=256&format=png"; do sleep 0.001; done
pkill -INT -f "^$BIN" ; wait
