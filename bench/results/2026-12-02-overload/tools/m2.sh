cd /work/wt-overload
M=THUMBD_MEMORY_LIMIT=536870912
uptime
for mode in inprocess cells; do
E=THUMBD_ENGINE=$mode
echo "== $mode base nomerge 10"; /tmp/ov/run1.sh b10$mode /tmp/base/thumbd 10 5s $M $E THUMBD_MERGE=false
echo "== $mode new nomerge 10"; /tmp/ov/run1.sh n10$mode /tmp/ov/thumbd-new 10 5s $M $E THUMBD_MERGE=false
echo "== $mode base nomerge 500"; /tmp/ov/run1.sh b500$mode /tmp/base/thumbd 500 5s $M $E THUMBD_MERGE=false
echo "== $mode new nomerge 500"; /tmp/ov/run1.sh n500$mode /tmp/ov/thumbd-newdiag 500 5s $M $E THUMBD_MERGE=false
echo "== $mode base merged 500"; /tmp/ov/run1.sh bm$mode /tmp/base/thumbd 500 5s $M $E
echo "== $mode new merged 500"; /tmp/ov/run1.sh nm$mode /tmp/ov/thumbd-newdiag 500 5s $M $E
done
uptime
