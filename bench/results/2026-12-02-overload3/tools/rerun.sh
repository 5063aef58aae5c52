#!/usr/bin/env bash
# Issue 29's overload table, rerun in at most ~20 minutes (BUDGET seconds):
# goodput at 10 and 500 clients posting the 12 MP photo (every request its
# own job: THUMBD_MERGE=false), 500 clients posting the same photo (merged:
# uploads read and hashed), in process and in cells mode, at no limit,
# 1 GiB, 512 MiB and 256 MiB; /health and /ready p99 by curl every 100 ms
# beside the bench's own probe; the answers by status (504s counted).
#
#   flock /tmp/thumbd-heavy.lock bench/results/2026-12-02-overload3/tools/rerun.sh
#
# Processes on the host, sized by THUMBD_MEMORY_LIMIT (thumbd derives every
# budget from it; the kernel does not enforce it). With CONTAINERS=1 the
# same steps at 256 MiB, 512 MiB and 1 GiB also run in containers of IMAGE
# (default thumbd:scratch, which must be built from this tree first:
# scripts/images.sh) with docker's --memory, the kernel enforcing it; the
# docker daemon is started for that (scripts/lib/docker.sh) and stopped
# after if this script started it. Output: $W/summary.md (one row a run)
# and every run's files in $W (default /tmp/ov-rerun). Each run is 5 s of
# load (DURATION) plus the drain; a run that would pass BUDGET (default
# 1140 s) is skipped and said so. ONLY=REGEX runs only the steps whose
# name (WHERE-LIMIT-MODE-LOAD, e.g. process-512m-cells-500) matches.
# ADMIN=1: the probes go to THUMBD_ADMIN_PORT (run1.sh, run1c.sh).
# EXTRA_ENV="NAME=VALUE ...": more settings for every run (e.g.
# THUMBD_PAST_CONNECTION_CAP=refuse).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
T=$(cd "$(dirname "$0")" && pwd)
export W=${W:-/tmp/ov-rerun}
DURATION=${DURATION:-5s}
BUDGET=${BUDGET:-1140}
IMAGE=${IMAGE:-thumbd:scratch}
mkdir -p "$W"
start=$(date +%s)
go build -o "$W/thumbd" ./service
go build -o "$W/bench" ./bench
"$W/bench" sources bench/results/tmp/sources >/dev/null
summary=$W/summary.md
{
  echo "# issue 29 overload rerun, $(date -u +%FT%TZ), $(git rev-parse --short HEAD), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| where | limit | mode | load | thumbnails/s | 2xx | 503 | 504 | other | /health p99 (bench) | /health p50 / p99 (curl) | /ready p50 / p99 (curl) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$summary"

# row WHERE LIMIT MODE LOAD NAME: one line of the summary from a run's files.
row() {
  local out=$W/out-$5.txt probe=$W/probe-$5.txt line tps ok s503 s504 other hb hc rc
  line=$(grep -m1 'thumbnails/s' "$out" || true)
  tps=$(sed -n 's/.*clients: \([0-9.]*\) thumbnails\/s.*/\1/p' <<<"$line")
  ok=$(grep -o '[0-9]* x 2xx' <<<"$line" | cut -d' ' -f1 || true)
  s503=$(grep -o '[0-9]* x 503' <<<"$line" | cut -d' ' -f1 || true)
  s504=$(grep -o '[0-9]* x 504' <<<"$line" | cut -d' ' -f1 || true)
  other=$(sed 's/.*answers: //' <<<"$line" | tr ',' '\n' | grep -v '2xx\|503\|504' | tr -d '\n' || true)
  hb=$(grep -o 'p99 [0-9.]* ms, max' "$out" | head -1 | cut -d' ' -f2 || true)
  hc=$("$T/pstat.sh" "$probe" | awk '/^\/health/ {print $4" / "$6}')
  rc=$("$T/pstat.sh" "$probe" | awk '/^\/ready/ {print $4" / "$6}')
  echo "| $1 | $2 | $3 | $4 | ${tps:-?} | ${ok:-0} | ${s503:-0} | ${s504:-0} | ${other:- } | ${hb:-?} | ${hc:-?} | ${rc:-?} |" >>"$summary"
}

# step WHERE LIMIT MODE LOAD: one run, unless the budget would be passed.
step() {
  local where=$1 limit=$2 mode=$3 load=$4 name="$1-$2-$3-$4" clients=500 env=()
  [[ "$name" =~ ${ONLY:-.} ]] || return 0
  if (( $(date +%s) - start > BUDGET - 45 )); then
    echo "| $where | $limit | $mode | $load | skipped: the budget of ${BUDGET}s was spent |||||||||" >>"$summary"
    return
  fi
  [ "$load" = 10 ] && clients=10
  [ "$load" = merged ] || env+=(THUMBD_MERGE=false)
  [ "$mode" = cells ] && env+=(THUMBD_ENGINE=cells)
  if [ -n "${EXTRA_ENV:-}" ]; then
    local extra; read -ra extra <<<"$EXTRA_ENV"; env+=("${extra[@]}")
  fi
  echo "== $name ($(( $(date +%s) - start )) s)" >&2
  if [ "$where" = process ]; then
    local bytes
    case $limit in none) bytes=8589934592 ;; 1g) bytes=1073741824 ;; 512m) bytes=536870912 ;; 256m) bytes=268435456 ;; esac
    env+=(THUMBD_MEMORY_LIMIT=$bytes)
    timeout 90 "$T/run1.sh" "$name" "$W/thumbd" "$clients" "$DURATION" "${env[@]}" >"$W/out-$name.txt" 2>&1 || true
  else
    timeout 90 "$T/run1c.sh" "$name" "$IMAGE" "$limit" "$clients" "$DURATION" "${env[@]}" >"$W/out-$name.txt" 2>&1 || true
  fi
  row "$where" "$limit" "$mode" "$load" "$name"
}

for limit in none 512m 256m 1g; do
  for mode in inprocess cells; do
    for load in 10 500 merged; do step process "$limit" "$mode" "$load"; done
  done
done
if [ "${CONTAINERS:-0}" = 1 ]; then
  source scripts/lib/docker.sh
  docker_up
  trap docker_down EXIT
  for limit in 512m 256m 1g; do
    for mode in inprocess cells; do
      for load in 10 500 merged; do step container "$limit" "$mode" "$load"; done
    done
  done
fi
echo >>"$summary"
echo "wall $(( $(date +%s) - start )) s; goodput = a row's thumbnails/s at 500 over the same where/limit/mode's at 10." >>"$summary"
cat "$summary"
