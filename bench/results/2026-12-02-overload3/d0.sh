cd /work/wt-overload3
B=THUMBD_MEMORY_LIMIT=8589934592
uptime
echo "== 8G d0 nomerge 500"; /tmp/ov3/run1.sh d0a /tmp/ov3/thumbd-d0 500 5s $B THUMBD_MERGE=false
grep DIAG504 /tmp/ov3/stderr-d0a-500.txt | awk '{print $2, $3}' | sort | uniq -c
echo "== 8G cells d0 nomerge 500"; /tmp/ov3/run1.sh d0c /tmp/ov3/thumbd-d0 500 5s $B THUMBD_MERGE=false THUMBD_ENGINE=cells
grep DIAG504 /tmp/ov3/stderr-d0c-500.txt | awk '{print $2, $3}' | sort | uniq -c
uptime
