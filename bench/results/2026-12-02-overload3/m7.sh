cd /work/wt-overload3
M=THUMBD_MEMORY_LIMIT=536870912
uptime
for r in 1 2; do
echo "== 512M merged 500 t1diag #$r"; PROBES=60 /tmp/ov3/run1.sh t1d$r /tmp/ov3/thumbd-t1diag 500 8s $M
echo "== 512M merged 500 t0diag #$r"; PROBES=60 /tmp/ov3/run1.sh t0d$r /tmp/ov3/thumbd-t0diag 500 8s $M
done
uptime
