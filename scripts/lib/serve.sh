# Sourced by the scripts that start a thumbd (process or container) and talk
# to it on loopback.

# free_port: a TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_ready BASE SECONDS [PID]: polls BASE/ready until it answers 200.
# Returns 1 after SECONDS, or as soon as PID (when given) has exited.
wait_ready() {
  local base=$1 end=$((SECONDS + $2)) pid=${3:-}
  until curl -fs "$base/ready" >/dev/null 2>&1; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.05
  done
}
