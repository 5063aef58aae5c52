#!/usr/bin/env bash
# Makes this directory's JPEGs with EXIF thumbnails, written by a real EXIF
# tool (Debian's libimage-exiftool-perl) rather than by thumbd's own code,
# from the golden tests' small source (400x300, 4:3) and libvips' CLI
# (libvips-tools). Usage: service/internal/exifthumb/testdata/make.sh
set -euo pipefail

main() {
  cd "$(dirname "$0")"
  local src=../../thumb/testdata/sources/small.jpg
  tmp=$(mktemp -d) # global: the EXIT trap runs after main returns
  trap 'rm -rf "$tmp"' EXIT

  # Thumbnails as cameras write them: 160 pixels wide, baseline JPEG.
  vips thumbnail "$src" "$tmp/t4x3.jpg[Q=75,strip]" 160 --height 120
  vips crop "$src" "$tmp/16x9.jpg[Q=70,strip]" 0 37 400 225
  vips thumbnail "$tmp/16x9.jpg" "$tmp/t16x9.jpg[Q=75,strip]" 160 --height 90
  # A 16:9 photo's thumbnail letterboxed into 160x120 with black bars, as
  # cameras that only write the DCF size do.
  vips embed "$tmp/t16x9.jpg" "$tmp/t16x9-letterbox.jpg[Q=75,strip]" 0 15 160 120 --extend black
  # A thumbnail of one flat colour: a ThumbHash that is red came from it.
  vips black "$tmp/black.v" 160 120 --bands 3
  vips linear "$tmp/black.v" "$tmp/red.v" "1 1 1" "230 20 20"
  vips cast "$tmp/red.v" "$tmp/red8.v" uchar
  vips copy "$tmp/red8.v" "$tmp/red.jpg[Q=90,strip]" --interpretation srgb

  thumb() { exiftool -q "-ThumbnailImage<=$2" "${@:4}" -o "$3" "$1"; }
  rm -f exif-*.jpg
  thumb "$src" "$tmp/t4x3.jpg" exif-4x3.jpg
  thumb "$src" "$tmp/t4x3.jpg" exif-4x3-orientation-6.jpg '-Orientation#=6'
  thumb "$src" "$tmp/red.jpg" exif-4x3-red.jpg
  thumb "$tmp/16x9.jpg" "$tmp/t16x9.jpg" exif-16x9.jpg
  thumb "$tmp/16x9.jpg" "$tmp/t16x9-letterbox.jpg" exif-16x9-letterboxed.jpg
  # exiftool writes a new EXIF big-endian (Motorola); most cameras write
  # little-endian (Intel) TIFF.
  thumb "$src" "$tmp/t4x3.jpg" exif-4x3-intel.jpg -ExifByteOrder=II -Make=thumbd
  ls -l exif-*.jpg
}

main "$@"
