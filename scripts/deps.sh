#!/usr/bin/env bash
# Installs what building and testing thumbd needs on a fresh Debian bookworm
# machine (as root), skipping whatever is already there. Usage:
#   scripts/deps.sh [dev|docker|node|nextjs|promtool]...   (default: dev)
set -euo pipefail

apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

main() {
  [ $# -eq 0 ] && set -- dev
  for what in "$@"; do
    case "$what" in
      # heif-enc, cjxl, tiffcp and convert make the new input formats' test files;
      # ffmpeg and ffprobe the videos service/internal/video is held to;
      # libavcodec-dev the decoders service/internal/videodecode links in
      # the dynamic build (FFmpeg 5.1: videodecode uses only API 5.1 and
      # the recipe's 7.1 share).
      dev) apt_install libvips-dev libvips-tools pkg-config gcc libimage-exiftool-perl \
        libheif-examples libjxl-tools libtiff-tools imagemagick ffmpeg libavcodec-dev libavutil-dev ;;
      docker) apt_install docker.io ;;
      promtool) apt_install prometheus ;;
      node) (cd "$(dirname "$0")/../bench/twins/node" && npm ci --no-audit --no-fund --loglevel=error) ;;
      # imgproxy's official Node client, for scripts/test-imgproxy.sh.
      imgproxy) (cd "$(dirname "$0")/../examples/imgproxy" && npm ci --no-audit --no-fund --loglevel=error) ;;
      # The Next.js example's test: next, react and puppeteer-core from its
      # lockfile, and Debian's Chromium for the browser.
      nextjs)
        apt_install chromium
        (cd "$(dirname "$0")/../examples/nextjs" && npm ci --no-audit --no-fund --loglevel=error)
        ;;
      *) echo "deps.sh: unknown group: $what" >&2; return 2 ;;
    esac
  done
}

main "$@"
