#!/usr/bin/env bash
# Makes sure the base images the Dockerfiles name exist locally: pulls them
# when a registry answers, otherwise builds equivalents offline:
#   debian:bookworm-slim   trimmed `debootstrap --variant=minbase bookworm`
#   golang:1.26-bookworm   that + gcc/g++/make/pkg-config + the host's /usr/local/go
# Usage: scripts/base-images.sh   (as root, dockerd running)
set -euo pipefail

readonly SLIM=debian:bookworm-slim
readonly BUILDER=golang:1.26-bookworm
readonly MIRROR="${THUMBD_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}"

have() { docker image inspect "$1" >/dev/null 2>&1; }
try_pull() { timeout 20 docker pull -q "$1" >/dev/null 2>&1; }

make_slim() {
  local root; root=$(mktemp -d /tmp/thumbd-rootfs.XXXXXX)
  command -v debootstrap >/dev/null || { apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
  echo "debootstrap minbase bookworm from ${MIRROR:-http://deb.debian.org/debian}" >&2
  debootstrap --variant=minbase bookworm "$root" "${MIRROR:-http://deb.debian.org/debian}" >/tmp/thumbd-debootstrap.log
  # The same trimming as the official slim image.
  rm -rf "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/tmp/* \
    "$root"/usr/share/man/* "$root"/usr/share/info/* \
    "$root"/usr/share/locale/* "$root"/usr/share/lintian "$root"/usr/share/linda
  # Licences stay (/usr/share/doc/*/copyright), as in the official image.
  find "$root"/usr/share/doc -mindepth 1 -type f -not -name copyright -delete
  find "$root"/usr/share/doc -mindepth 1 -type d -empty -delete
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
CFG
  echo 'APT::Install-Recommends "false";' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' \
    "${MIRROR:-http://deb.debian.org/debian}" "${MIRROR:-http://deb.debian.org/debian}" >"$root/etc/apt/sources.list"
  tar -C "$root" --numeric-owner -c . | docker import -c 'CMD ["bash"]' - "$SLIM" >/dev/null
  rm -rf "$root"
}

make_builder() {
  local ctx; ctx=$(mktemp -d /tmp/thumbd-builderctx.XXXXXX)
  cp -al "$(go env GOROOT)" "$ctx/go" 2>/dev/null || cp -a "$(go env GOROOT)" "$ctx/go"
  # The host's locally added CAs: this image stands in for golang:1.26-bookworm
  # on this machine, so it trusts what the host trusts (go mod download).
  mkdir -p "$ctx/ca"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
  cat >"$ctx/Dockerfile" <<DF
FROM $SLIM
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      ca-certificates g++ gcc libc6-dev make pkg-config >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY ca /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null 2>&1
COPY go /usr/local/go
ENV GOLANG_VERSION=$(go env GOVERSION | sed 's/^go//') GOTOOLCHAIN=local GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
DF
  docker build -q -t "$BUILDER" "$ctx" >/dev/null
  rm -rf "$ctx"
}

main() {
  have "$SLIM" || try_pull "$SLIM" || make_slim
  have "$BUILDER" || try_pull "$BUILDER" || make_builder
  docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^($SLIM|$BUILDER) " >&2
}

main "$@"
