#!/bin/bash
# pts.sh NAME MEM CLIENTS [env]: bench memory (container, host network) with a
# timestamped curl probe every 50 ms from the container's start.
W=/tmp/thr; name=$1 mem=$2 clients=$3; shift 3
envs=(); for e in "$@"; do envs+=(-env "$e"); done
/tmp/ovbench memory -lock "" -image thumbd:scratch -memory "$mem" -clients "$clients" -duration 5s -probe 0 -source /work/main/bench/results/tmp/sources/photo12.jpg "${envs[@]}" > $W/out-$name.txt 2>$W/err-$name.txt &
bp=$!
: > $W/pts-$name.txt
port=""
while kill -0 $bp 2>/dev/null; do
  if [ -z "$port" ]; then
    id=$(docker ps --latest --quiet --filter ancestor=thumbd:scratch 2>/dev/null)
    [ -n "$id" ] && port=$(docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$id" 2>/dev/null | sed -n 's/^PORT=//p')
    sleep 0.05; continue
  fi
  t=$(date +%s.%N)
  r=$(curl -s -o /dev/null --max-time 1 -w "%{http_code} %{time_connect} %{time_starttransfer} %{time_total}" "http://127.0.0.1:$port/health")
  echo "$t $r" >> $W/pts-$name.txt
  sleep 0.05
done
wait $bp
grep thumbnails/s $W/out-$name.txt | cut -c1-150
awk 'NR==1{t0=$1} $2==200 {printf "%6.2f %s %6.1f %6.1f\n", $1-t0, $2, $3*1000, $5*1000}' $W/pts-$name.txt | sort -k4 -n -r | head -12
awk '$2==200 {n++} END {print n, "probes"}' $W/pts-$name.txt
