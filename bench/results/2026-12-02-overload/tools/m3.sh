cd /work/wt-overload
M=THUMBD_MEMORY_LIMIT=536870912
uptime
echo "== t64 merged 500"; /tmp/ov/run1.sh t64m /tmp/ov/thumbd-t64 500 5s $M
echo "== base nomerge 500"; /tmp/ov/run1.sh b500b /tmp/base/thumbd 500 5s $M THUMBD_MERGE=false
echo "== new nomerge 500"; /tmp/ov/run1.sh n500b /tmp/ov/thumbd-new 500 5s $M THUMBD_MERGE=false
echo "== base nomerge 10"; /tmp/ov/run1.sh b10b /tmp/base/thumbd 10 5s $M THUMBD_MERGE=false
echo "== new nomerge 10"; /tmp/ov/run1.sh n10b /tmp/ov/thumbd-new 10 5s $M THUMBD_MERGE=false
echo "== cells base nomerge 500"; /tmp/ov/run1.sh cb500b /tmp/base/thumbd 500 5s $M THUMBD_MERGE=false THUMBD_ENGINE=cells
echo "== cells new nomerge 500"; /tmp/ov/run1.sh cn500b /tmp/ov/thumbd-new 500 5s $M THUMBD_MERGE=false THUMBD_ENGINE=cells
uptime
