#!/bin/bash
# probe.sh OUT N INTERVAL: wait for $PORTFILE, then N curl probes
# alternating /health and /ready, 1 s timeout each; the bounded waits
# end it whatever happens.
out=$1; n=${2:-100}; iv=${3:-0.1}
: > "$out"
for i in $(seq 1 300); do [ -s "$PORTFILE" ] && curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$(cat "$PORTFILE")/ready" && break; sleep 0.1; done
[ -s "$PORTFILE" ] || exit 0
sleep 1.5
port=$(cat "$PORTFILE")
for i in $(seq 1 "$n"); do
  p=/health; [ $((i%2)) = 0 ] && p=/ready
  curl -s -o /dev/null --max-time 1 -w "$p %{time_connect} %{time_starttransfer} %{time_total} %{http_code}\n" "http://127.0.0.1:$port$p" >> "$out"
  sleep "$iv"
done
