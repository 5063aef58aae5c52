#!/usr/bin/env bash
# Collects the licence notices of everything linked into a thumbd binary into
# OUTDIR: thumbd's own LICENSE and THIRD_PARTY_NOTICES.md, the licences of the libraries
# built by scripts/build-libvips.sh (with the recipe itself), Debian's
# copyright files of the system libraries linked in, and the licence files
# of the Go modules compiled in.
# Usage: scripts/notices.sh OUTDIR VIPS_PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."

readonly DEBIAN_PKGS="libc6 libgcc-s1 gcc-12-base libglib2.0-0 libffi8 libpcre2-8-0 libselinux1
  libmount1 libblkid1 zlib1g libexpat1 libexif12 ca-certificates"

main() {
  [ $# -eq 2 ] || { echo "usage: notices.sh OUTDIR VIPS_PREFIX" >&2; return 2; }
  local out=$1 prefix=$2 pkg mod dir f
  mkdir -p "$out/debian" "$out/go"
  cp THIRD_PARTY_NOTICES.md "$out/"
  cp LICENSE "$out/thumbd.LICENSE"
  cp -r "$prefix/share/licenses" "$out/built-from-source"
  for pkg in $DEBIAN_PKGS; do
    if [ -f "/usr/share/doc/$pkg/copyright" ]; then cp "/usr/share/doc/$pkg/copyright" "$out/debian/$pkg.copyright"; fi
  done
  go list -deps -f '{{with .Module}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}' ./service | sort -u |
  while read -r mod dir; do
    if [ -z "$dir" ] || [ "${mod%@*}" = github.com/thumbd/thumbd ]; then continue; fi
    for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE*; do
      if [ -f "$f" ]; then cp "$f" "$out/go/$(echo "${mod%@*}" | tr / _).$(basename "$f")"; fi
    done
  done
  cp "$(go env GOROOT)/LICENSE" "$out/go/golang.LICENSE"
  dedupe "$out"
}

# dedupe DIR: a text found twice stays in its first file; later copies become
# a one-line pointer to it (the scratch image counts every byte).
dedupe() {
  local sum file; declare -A seen
  while read -r sum file; do
    if [ -n "${seen[$sum]:-}" ]; then echo "Same text as ${seen[$sum]#"$1"/}." >"$file"
    else seen[$sum]=$file; fi
  done < <(find "$1" -type f -exec sha256sum {} + | sort -k2)
}

main "$@"
