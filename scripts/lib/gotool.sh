# Builds a Go tool whose module graph lives in a tool module of its own
# (scripts/NAME/go.mod, `tool PKG`), apart from the service's go.mod, and
# caches the binary in $THUMBD_CACHE (default /var/cache/thumbd) under a name
# keyed by the tool module's go.mod and go.sum (and its own .go files, for a
# tool whose main is ours: scripts/otelcol): a version bump builds again,
# every other run reuses it. A cold build holds the build lock
# (/tmp/thumbd-build.lock). Prints the binary's path.
# Usage (sourced): build_gotool NAME MODULE PKG DURATION
#   NAME      the tool module's directory under scripts/, and the binary's name
#   MODULE    the module whose version names the cache entry
#   PKG       the main package to build
#   DURATION  how long a cold build takes, for the message
build_gotool() {
  local name=$1 module=$2 pkg=$3 duration=$4
  local cache="${THUMBD_CACHE:-/var/cache/thumbd}"
  local here key bin tmp
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/$name"
  key=$(cat "$here/go.mod" "$here/go.sum" $(find "$here" -maxdepth 1 -name '*.go' | sort) | sha256sum | cut -c1-12)
  bin="$cache/$name-$(awk -v m="$module" '$1 == m { print $2 }' "$here/go.mod")-$key/$name"
  if [ ! -x "$bin" ]; then
    mkdir -p "$cache"
    exec 9>/tmp/thumbd-build.lock
    flock 9
    if [ ! -x "$bin" ]; then
      echo "build-$name: building $bin ($duration, once)" >&2
      tmp=$(mktemp -d "$cache/$name-build.XXXXXX")
      (cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$tmp/$name" "$pkg")
      mkdir -p "$(dirname "$bin")"
      mv "$tmp/$name" "$bin"
      rmdir "$tmp"
    fi
    exec 9>&-
  fi
  echo "$bin"
}
