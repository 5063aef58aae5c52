#!/usr/bin/env bash
set -euo pipefail
THUMBD_SOURCE=/tmp/ipsrc THUMBD_IMGPROXY=true PORT=18191 taskset -c 1 /tmp/ab-main/thumbd-static >/tmp/ip-server.log 2>&1 &
P=$!; sleep 1
A="localhost:18191/thumbnail?src=large.jpg&w=256&h=256&fit=cover&format=webp"
B="localhost:18191/insecure/rs:fill:256:256/f:webp/plain/local:///large.jpg"
curl -s -o /tmp/ip-a.webp -w "A %{http_code} %{content_type}\n" "$A"; curl -s -o /tmp/ip-b.webp -w "B %{http_code} %{content_type}\n" "$B"
for round in 1 2 3 4 5; do
  for u in A B; do url=${!u}
    for i in $(seq 30); do curl -s -o /dev/null -w "$u %{time_total}\n" "$url"; done
  done
done
kill $P
