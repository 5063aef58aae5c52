cd /work/wt-overload
B=THUMBD_MEMORY_LIMIT=8589934592
M=THUMBD_MEMORY_LIMIT=536870912
uptime
echo "== 8G base nomerge 500 #1"; /tmp/ov/run1.sh b8a /tmp/base/thumbd 500 5s $B THUMBD_MERGE=false
echo "== 8G new3 nomerge 500 #1"; /tmp/ov/run1.sh n8a /tmp/ov/thumbd-new3 500 5s $B THUMBD_MERGE=false
echo "== 8G new3 nomerge 500 #2"; /tmp/ov/run1.sh n8b /tmp/ov/thumbd-new3 500 5s $B THUMBD_MERGE=false
echo "== 8G base nomerge 500 #2"; /tmp/ov/run1.sh b8b /tmp/base/thumbd 500 5s $B THUMBD_MERGE=false
echo "== 8G base nomerge 10"; /tmp/ov/run1.sh b8c /tmp/base/thumbd 10 5s $B THUMBD_MERGE=false
echo "== 8G new3 nomerge 10"; /tmp/ov/run1.sh n8c /tmp/ov/thumbd-new3 10 5s $B THUMBD_MERGE=false
echo "== 512M new3 nomerge 500"; /tmp/ov/run1.sh n5a /tmp/ov/thumbd-new3 500 5s $M THUMBD_MERGE=false
echo "== 512M base nomerge 500"; /tmp/ov/run1.sh b5a /tmp/base/thumbd 500 5s $M THUMBD_MERGE=false
echo "== 512M new3 merged 500 inprocess"; /tmp/ov/run1.sh n3m /tmp/ov/thumbd-new3diag 500 5s $M
echo "== 8G cells new3 nomerge 500"; /tmp/ov/run1.sh cn8 /tmp/ov/thumbd-new3 500 5s $B THUMBD_MERGE=false THUMBD_ENGINE=cells
echo "== 8G cells base nomerge 500"; /tmp/ov/run1.sh cb8 /tmp/base/thumbd 500 5s $B THUMBD_MERGE=false THUMBD_ENGINE=cells
uptime
