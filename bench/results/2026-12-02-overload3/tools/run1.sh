#!/bin/bash
# run1.sh NAME BIN CLIENTS DURATION [env...]: one thumbd process under
# `bench memory` (500 or 10 clients posting photo12.jpg), probed by
# probe.sh beside; files in $W (default /tmp/ov-rerun). ADMIN=1: thumbd
# gets THUMBD_ADMIN_PORT (bench memory -admin) and both probes go there.
W=${W:-/tmp/ov-rerun}; T=$(cd "$(dirname "$0")" && pwd)
name=$1 bin=$2 clients=$3 dur=$4; shift 4
envs=(); for e in "$@"; do envs+=(-env "$e"); done
rm -f "$W/port" "$W/pid"
PORTFILE=$W/port "$T/probe.sh" "$W/probe-$name.txt" "${PROBES:-40}" 0.1 &
pp=$!
"$W/bench" memory -lock "" ${ADMIN:+-admin} -clients "$clients" -duration "$dur" -probe 250ms -source bench/results/tmp/sources/photo12.jpg "${envs[@]}" -- sh -c "echo \$\$ > $W/pid; echo \${THUMBD_ADMIN_PORT:-\$PORT} > $W/port; exec $bin" 2>"$W/stderr-$name.txt"
wait $pp
"$T/pstat.sh" "$W/probe-$name.txt"
