#!/usr/bin/env bash
# Collects the licence notices of everything linked into a thumbd binary into
# OUTDIR: the project's THIRD_PARTY_NOTICES.md, the licences of the libraries
# built by scripts/build-libvips.sh (with the recipe itself), Debian's
# copyright files of the system libraries linked in, and the licence files
# of the Go modules compiled in.
# Usage: scripts/notices.sh OUTDIR VIPS_PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."

readonly DEBIAN_PKGS="libc6 libgcc-s1 libstdc++6 libglib2.0-0 libffi8 libpcre2-8-0
  libselinux1 libmount1 libblkid1 zlib1g libexpat1 libjpeg62-turbo libpng16-16
  libwebp7 libwebpmux3 libwebpdemux2 libexif12 liblcms2-2"

main() {
  [ $# -eq 2 ] || { echo "usage: notices.sh OUTDIR VIPS_PREFIX" >&2; return 2; }
  local out=$1 prefix=$2 pkg mod dir f
  mkdir -p "$out/debian" "$out/go"
  cp THIRD_PARTY_NOTICES.md "$out/"
  cp -r "$prefix/share/licenses" "$out/built-from-source"
  for pkg in $DEBIAN_PKGS; do
    [ -f "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$out/debian/$pkg.copyright"
  done
  go list -deps -f '{{with .Module}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}' ./service | sort -u |
  while read -r mod dir; do
    [ -n "$dir" ] && [ "${mod%@*}" != github.com/thumbd/thumbd ] || continue
    for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE*; do
      [ -f "$f" ] && cp "$f" "$out/go/$(echo "${mod%@*}" | tr / _).$(basename "$f")"
    done
  done
  cp "$(go env GOROOT)/LICENSE" "$out/go/golang.LICENSE"
}

main "$@"
