cd /work/wt-overload
B=THUMBD_MEMORY_LIMIT=8589934592
uptime
echo "== 8G base nomerge 500"; /tmp/ov/run1.sh b8g /tmp/base/thumbd 500 5s $B THUMBD_MERGE=false
echo "== 8G new nomerge 500"; /tmp/ov/run1.sh n8g /tmp/ov/thumbd-new2diag 500 5s $B THUMBD_MERGE=false
echo "== 8G base nomerge 10"; /tmp/ov/run1.sh b8g10 /tmp/base/thumbd 10 5s $B THUMBD_MERGE=false
echo "== 8G new nomerge 10"; /tmp/ov/run1.sh n8g10 /tmp/ov/thumbd-new2 10 5s $B THUMBD_MERGE=false
echo "== 512M new2 merged 500 inprocess"; /tmp/ov/run1.sh n2m /tmp/ov/thumbd-new2diag 500 5s THUMBD_MEMORY_LIMIT=536870912
echo "== 512M base merged 500 inprocess"; /tmp/ov/run1.sh b2m /tmp/base/thumbd 500 5s THUMBD_MEMORY_LIMIT=536870912
echo "== 512M new2 merged 500 cells"; /tmp/ov/run1.sh n2mc /tmp/ov/thumbd-new2diag 500 5s THUMBD_MEMORY_LIMIT=536870912 THUMBD_ENGINE=cells
echo "== 512M base merged 500 cells"; /tmp/ov/run1.sh b2mc /tmp/base/thumbd 500 5s THUMBD_MEMORY_LIMIT=536870912 THUMBD_ENGINE=cells
uptime
