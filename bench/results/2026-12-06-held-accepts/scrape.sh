#!/bin/bash
# every second: the serving port's connection counters and the merge counters of the running thumbd-static
out=$1; : > $out
while true; do
  pid=$(pgrep -f "^$BIN" | head -1)
  if [ -n "$pid" ]; then
    port=$(ss -ltnpH | grep "pid=$pid," | awk '{print $4}' | sed 's/.*://' | head -1)
    if [ -n "$port" ]; then
      echo "# $(date +%s.%N) pid=$pid port=$port" >> $out
      curl -s -m 1 http://127.0.0.1:$port/metrics | grep -E "^thumbd_(connections|merge|requests_in|queue|admission|jobs)[a-z_]*(\{|\s)" >> $out
    fi
  fi
  sleep 1
done
