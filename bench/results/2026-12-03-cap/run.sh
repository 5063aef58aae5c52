#!/bin/bash
# rounds of none-inprocess {10, 500} with caps: default, 322, 130
# (the default then: queue 1024 from the limit, cap 1282)
cd /work/main
T=bench/results/2026-12-02-overload3/tools
for r in 1 2 3; do
  for cap in default 322 130; do
    extra=""; [ $cap != default ] && extra="THUMBD_MAX_CONNECTIONS=$cap"
    ADMIN=1 W=/tmp/capx/r$r-$cap BUDGET=600 ONLY="^process-none-inprocess-(500)\$" EXTRA_ENV="$extra" $T/rerun.sh >/dev/null 2>&1
    grep '| process' /tmp/capx/r$r-$cap/summary.md | sed "s/^/r$r $cap /"
  done
  W=/tmp/capx/r$r-ten ADMIN=1 BUDGET=600 ONLY="^process-none-inprocess-10\$" $T/rerun.sh >/dev/null 2>&1
  grep '| process' /tmp/capx/r$r-ten/summary.md | sed "s/^/r$r ten /"
done
