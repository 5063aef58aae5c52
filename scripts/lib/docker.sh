# Sourced by the image scripts and scripts/test.sh: a docker daemon to talk
# to, started by hand when none runs (systemd does not start one here).
# The classic builder is used everywhere: Debian's docker.io has no BuildKit.
export DOCKER_BUILDKIT=0
readonly THUMBD_DOCKERD_LOG=/tmp/thumbd-dockerd.log
# The pid of the dockerd that docker_up started in this shell, if any. A
# variable, not a file: only the shell that started dockerd stops it.
THUMBD_DOCKERD_PID=

# docker_up: install docker.io if needed, start dockerd if none answers.
docker_up() {
  command -v dockerd >/dev/null || "$(dirname "${BASH_SOURCE[0]}")/../deps.sh" docker
  docker info >/dev/null 2>&1 && return 0
  echo "starting dockerd (log: $THUMBD_DOCKERD_LOG)" >&2
  dockerd >>"$THUMBD_DOCKERD_LOG" 2>&1 &
  THUMBD_DOCKERD_PID=$!
  local i
  for i in $(seq 1 120); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$THUMBD_DOCKERD_PID" 2>/dev/null || break
    sleep 0.5
  done
  echo "dockerd did not come up; see $THUMBD_DOCKERD_LOG" >&2
  return 1
}

# docker_down: stop the dockerd that docker_up started in this shell, if any.
docker_down() {
  [ -n "$THUMBD_DOCKERD_PID" ] || return 0
  local pid=$THUMBD_DOCKERD_PID i
  THUMBD_DOCKERD_PID=
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  echo "dockerd $pid still running after SIGTERM" >&2
}
