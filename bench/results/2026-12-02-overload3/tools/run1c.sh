#!/bin/bash
# run1c.sh NAME IMAGE MEMORY CLIENTS DURATION [env...]: run1.sh for a
# container of IMAGE with docker's --memory MEMORY; probe.sh finds the
# port docker published on 127.0.0.1, or the container's PORT on the host
# network. ADMIN=1: thumbd gets THUMBD_ADMIN_PORT (bench memory -admin,
# host network) and both probes go there. LOAD_CGROUP=DIR (a cgroup
# directory, made if missing): the load generator runs in a CPU cgroup of
# its own, as a client pod or another machine would, instead of its
# threads each weighing as much as the whole container at the root.
W=${W:-/tmp/ov-rerun}; T=$(cd "$(dirname "$0")" && pwd)
name=$1 image=$2 mem=$3 clients=$4 dur=$5; shift 5
envs=(); for e in "$@"; do envs+=(-env "$e"); done
rm -f "$W/port"
( for i in $(seq 1 300); do
    id=$(docker ps --latest --quiet --filter "ancestor=$image" 2>/dev/null)
    # published on 127.0.0.1 (bridge), else its PORT (host network)
    p=$([ -n "$id" ] && { docker port "$id" 2>/dev/null | sed -n 's/.*127\.0\.0\.1:\([0-9]*\)$/\1/p' | head -1; })
    var=PORT; [ -n "${ADMIN:-}" ] && var=THUMBD_ADMIN_PORT
    [ -n "$p" ] || p=$([ -n "$id" ] && docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$id" 2>/dev/null | sed -n "s/^$var=//p")
    [ -n "$p" ] && { echo "$p" > "$W/port"; break; }
    sleep 0.1
  done ) &
PORTFILE=$W/port "$T/probe.sh" "$W/probe-$name.txt" "${PROBES:-40}" 0.1 &
pp=$!
if [ -n "${LOAD_CGROUP:-}" ]; then
  mkdir -p "$LOAD_CGROUP" && echo $$ > "$LOAD_CGROUP/cgroup.procs" || { echo "run1c.sh: cannot join $LOAD_CGROUP" >&2; exit 1; }
fi
"$W/bench" memory -lock "" ${ADMIN:+-admin} -image "$image" -memory "$mem" -clients "$clients" -duration "$dur" -probe 250ms -source bench/results/tmp/sources/photo12.jpg "${envs[@]}" 2>"$W/stderr-$name.txt"
wait $pp
"$T/pstat.sh" "$W/probe-$name.txt"
