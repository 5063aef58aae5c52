#!/bin/bash
# 3 interleaved rounds, in process, 500 clients: the queue's 256 places
# with the cap's quarter more (322: past the queue, queue_full 503s at
# once) against a cap of slots + queue (258), and a queue of 1024 under a
# cap of 322; at no limit and 256 MiB; the 10-client rate once a round.
cd /work/main
T=bench/results/2026-12-02-overload3/tools
for r in 1 2 3; do
  for lim in none 256m; do
    for v in "q256c322:" "q256c258:THUMBD_MAX_CONNECTIONS=258" "q1024c322:THUMBD_QUEUE=1024 THUMBD_MAX_CONNECTIONS=322"; do
      name=${v%%:*} extra=${v#*:}
      ADMIN=1 W=/tmp/capy/r$r-$lim-$name BUDGET=600 ONLY="^process-$lim-inprocess-500\$" EXTRA_ENV="$extra" $T/rerun.sh >/dev/null 2>&1
      grep '| process' /tmp/capy/r$r-$lim-$name/summary.md | sed "s/^/r$r $name /"
    done
    ADMIN=1 W=/tmp/capy/r$r-$lim-ten BUDGET=600 ONLY="^process-$lim-inprocess-10\$" $T/rerun.sh >/dev/null 2>&1
    grep '| process' /tmp/capy/r$r-$lim-ten/summary.md | sed "s/^/r$r ten /"
  done
done
