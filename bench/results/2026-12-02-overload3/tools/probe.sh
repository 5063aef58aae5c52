#!/bin/bash
# probe.sh OUT N INTERVAL: wait for $PORTFILE, then N curl probes
# alternating /health and /ready, 1 s timeout each; the bounded waits
# end it whatever happens. PROBE_CGROUP=DIR (a cgroup directory, made if
# missing, e.g. /sys/fs/cgroup/cpu/thumbd-probe on cgroup v1): the probes
# run in a CPU cgroup of their own, as a kubelet runs in its own service's
# cgroup, instead of beside the load generator's threads.
out=$1; n=${2:-100}; iv=${3:-0.1}
: > "$out"
if [ -n "${PROBE_CGROUP:-}" ]; then
  mkdir -p "$PROBE_CGROUP" && echo $$ > "$PROBE_CGROUP/cgroup.procs" || { echo "probe.sh: cannot join $PROBE_CGROUP" >&2; exit 1; }
fi
for i in $(seq 1 300); do [ -s "$PORTFILE" ] && curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$(cat "$PORTFILE")/ready" && break; sleep 0.1; done
[ -s "$PORTFILE" ] || exit 0
sleep 1.5
port=$(cat "$PORTFILE")
for i in $(seq 1 "$n"); do
  p=/health; [ $((i%2)) = 0 ] && p=/ready
  curl -s -o /dev/null --max-time 1 -w "$p %{time_connect} %{time_starttransfer} %{time_total} %{http_code}\n" "http://127.0.0.1:$port$p" >> "$out"
  sleep "$iv"
done
