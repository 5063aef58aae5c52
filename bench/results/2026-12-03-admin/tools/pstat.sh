#!/bin/bash
# pstat.sh FILE: per path, answered (200) probes' p50/p99/max ms; timeouts (>=1 s)
for p in /health /ready; do
 grep "^$p " "$1" | awk '$5==200 || $4>=0.99 {print $4*1000, $2*1000}' | sort -n | awk -v p=$p '{t[NR]=$1; c[NR]=$2; if($1>=990) to++} END{ if(NR==0){print p, "none"; exit}; i50=int(NR*0.5+0.5); if(i50<1)i50=1; i99=int(NR*0.99+0.5); if(i99<1)i99=1; printf "%s n=%d p50 %.1f p99 %.1f max %.1f ms (connect of max %.1f) timeouts=%d\n", p, NR, t[i50], t[i99], t[NR], c[NR], to+0}'
done
