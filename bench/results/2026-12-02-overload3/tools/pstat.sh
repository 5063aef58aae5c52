#!/bin/bash
# pstat.sh FILE: per path, answered (200) probes' p50/p99/max ms; timeouts
# (>=1 s); and the p99 of the part after connect (connect to the last
# byte: what thumbd took, without the probe's own connect and scheduling).
q99='{v[NR]=$1} END{i=int(NR*0.99+0.5); if(i<1)i=1; printf "%.1f", v[i]}'
for p in /health /ready; do
 after=$(grep "^$p " "$1" | awk '$5==200 {print ($4-$2)*1000}' | sort -n | awk "$q99")
 grep "^$p " "$1" | awk '$5==200 || $4>=0.99 {print $4*1000, $2*1000}' | sort -n | awk -v p=$p -v after="$after" '{t[NR]=$1; c[NR]=$2; if($1>=990) to++} END{ if(NR==0){print p, "none"; exit}; i50=int(NR*0.5+0.5); if(i50<1)i50=1; i99=int(NR*0.99+0.5); if(i99<1)i99=1; printf "%s n=%d p50 %.1f p99 %.1f max %.1f ms (connect of max %.1f; after connect p99 %s) timeouts=%d\n", p, NR, t[i50], t[i99], t[NR], c[NR], after, to+0}'
done
