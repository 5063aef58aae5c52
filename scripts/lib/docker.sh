# Sourced by the image scripts: a docker daemon to talk to, started by hand
# when none runs (systemd does not start one on these machines).
# The classic builder is used everywhere: Debian's docker.io has no BuildKit.
export DOCKER_BUILDKIT=0
readonly THUMBD_DOCKERD_PIDFILE=/tmp/thumbd-dockerd.pid
readonly THUMBD_DOCKERD_LOG=/tmp/thumbd-dockerd.log

# docker_up: install docker.io if needed, start dockerd if none answers.
# Records the pid in $THUMBD_DOCKERD_PIDFILE only when it started one.
docker_up() {
  command -v dockerd >/dev/null || "$(dirname "${BASH_SOURCE[0]}")/../deps.sh" docker
  docker info >/dev/null 2>&1 && return 0
  echo "starting dockerd (log: $THUMBD_DOCKERD_LOG)" >&2
  dockerd >"$THUMBD_DOCKERD_LOG" 2>&1 &
  echo $! >"$THUMBD_DOCKERD_PIDFILE"
  local i
  for i in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "dockerd did not come up; see $THUMBD_DOCKERD_LOG" >&2
  return 1
}

# docker_down: stop the dockerd that docker_up started, if any.
docker_down() {
  [ -f "$THUMBD_DOCKERD_PIDFILE" ] || return 0
  local pid; pid=$(cat "$THUMBD_DOCKERD_PIDFILE")
  rm -f "$THUMBD_DOCKERD_PIDFILE"
  kill "$pid" 2>/dev/null || return 0
  local i
  for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  echo "dockerd $pid still running after SIGTERM" >&2
}
