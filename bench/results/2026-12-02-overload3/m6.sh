cd /work/wt-overload3
B=THUMBD_MEMORY_LIMIT=8589934592
M=THUMBD_MEMORY_LIMIT=536870912
uptime
for r in 1 2; do
echo "== 512M merged 500 t0 #$r"; /tmp/ov3/run1.sh t0m$r /tmp/ov3/thumbd-t0 500 5s $M
echo "== 512M merged 500 t1 #$r"; /tmp/ov3/run1.sh t1m$r /tmp/ov3/thumbd-t1 500 5s $M
done
echo "== 8G d1 nomerge 500"; /tmp/ov3/run1.sh d1a /tmp/ov3/thumbd-d1 500 5s $B THUMBD_MERGE=false
grep DIAG504 /tmp/ov3/stderr-d1a-500.txt | awk '{print $2, $3}' | sort | uniq -c
echo "== 8G cells d1 nomerge 500"; /tmp/ov3/run1.sh d1c /tmp/ov3/thumbd-d1 500 5s $B THUMBD_MERGE=false THUMBD_ENGINE=cells
grep DIAG504 /tmp/ov3/stderr-d1c-500.txt | awk '{print $2, $3}' | sort | uniq -c
uptime
