#!/usr/bin/env bash
# The one libvips recipe, used on the host and in both Dockerfiles' builder
# stage. Builds into PREFIX, from Debian source packages (no upstream hosts):
#   Highway 1.2.0 (trixie, static, PIC)   SIMD for libvips 8.16
#   lcms2 2.14 (bookworm, static, PIC)    colour management (CMYK JPEGs)
#   util-linux 2.38.1 (bookworm)          static libmount/libblkid for static gio
#   libvips 8.16.1 (trixie orig tarball)  static AND shared, no modules, no vips7
#                                         compat, only jpeg/png/webp/gif/exif/lcms/zlib
# glib, libjpeg-turbo, libpng, libwebp, libexif, zlib, expat come from
# bookworm's -dev packages (they ship both .a and .so).
#
# Usage: scripts/build-libvips.sh [PREFIX]
#   PREFIX defaults to $THUMBD_CACHE/libvips-<recipe hash> (THUMBD_CACHE
#   defaults to /var/cache/thumbd). A PREFIX holding a build of this exact
#   recipe (this file, comments aside) is reused as it is. The last line on stdout is the prefix.
#   THUMBD_NO_APT=1 skips installing build dependencies with apt-get.
set -euo pipefail

readonly CACHE="${THUMBD_CACHE:-/var/cache/thumbd}"
readonly MIRROR="${THUMBD_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# suite package=version sha256-of-orig-tarball
readonly SOURCES="
trixie vips=8.16.1-1+deb13u2 df960c3df02da8ae16ee19e79c9428e955d178242a8f06064e07e0c417238e6e
trixie highway=1.2.0-2 7e0be78b8318e8bdbf6fa545d2ecb4c90f947df03f7aadc42c1967f019e63343
bookworm lcms2=2.14-2+deb12u1 28474ea6f6591c4d4cee972123587001a4e6e353412a41b3e9e82219818d5740
bookworm util-linux=2.38.1-5+deb12u3 60492a19b44e6cf9a3ddff68325b333b8b52b6c59ce3ebd6a0ecaa4c5117e84f
"
readonly BUILD_DEPS="gcc g++ make pkg-config meson ninja-build cmake dpkg-dev patch xz-utils file
  libglib2.0-dev libexpat1-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libexif-dev
  zlib1g-dev libffi-dev libpcre2-dev libselinux1-dev libblkid-dev libmount-dev"

log() { echo "build-libvips: $*" >&2; }

install_deps() {
  [ "${THUMBD_NO_APT:-0}" = 1 ] && return 0
  local missing=() pkg
  for pkg in $BUILD_DEPS; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# fetch_sources DIR: the orig tarballs (and Debian packaging where the mirror
# has it) into DIR, through a private apt configuration with deb-src lines.
fetch_sources() {
  local dir=$1 apt="$1/apt" suite spec sum name ver orig
  mkdir -p "$apt/lists/partial" "$apt/cache"
  local need=0
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    ls "$dir/${spec%%=*}_"*.orig.tar.* >/dev/null 2>&1 || need=1
  done <<<"$SOURCES"
  [ "$need" = 1 ] || return 0
  printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
    "$MIRROR" trixie "$MIRROR" bookworm >"$apt/sources.list"
  local o=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
           -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" update -qq
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    # vips' Debian packaging answers 404 on this mirror: the orig tarball is what we use.
    (cd "$dir" && apt-get "${o[@]}" source --download-only -qq "$spec" >/dev/null 2>&1) || true
  done <<<"$SOURCES"
}

# unpack DIR NAME VERSION SUM -> prints the unpacked source directory
unpack() {
  local dir=$1 name=$2 ver=$3 sum=$4 orig
  orig=$(ls "$dir/${name}_${ver%%-*}".orig.tar.*)
  echo "$sum  $orig" | sha256sum -c --quiet - >&2
  if [ -f "$dir/${name}_${ver}.dsc" ] && [ -f "$dir/${name}_${ver}.debian.tar.xz" ]; then
    dpkg-source --no-check -x "$dir/${name}_${ver}.dsc" "$WORK/$name" >/dev/null
    # Debian's patches touch configure.ac/Makefile.am: keep the shipped autotools
    # output newer, so make does not ask for automake (absent from builders).
    local f
    for f in aclocal.m4 configure Makefile.in config.h.in; do
      find "$WORK/$name" -name "$f" -exec touch {} +
    done
  else
    mkdir -p "$WORK/$name" && tar -xf "$orig" -C "$WORK/$name" --strip-components=1
  fi
  echo "$WORK/$name"
}

# The one change to libvips' source: its built-in ICC profiles are inflated
# with zlib instead of GIO's GZlibDecompressor, whose object file drags most
# of GIO (GSettings, GApplication, PCRE2 through GRegex) into a static link.
patch_vips() {
  patch -s -p1 -d "$1" <<'PATCH'
--- a/libvips/colour/profile_load.c
+++ b/libvips/colour/profile_load.c
@@ -40,6 +40,7 @@
 
 #include <stdio.h>
 #include <math.h>
+#include <zlib.h>
 
 #include <vips/internal.h>
 
@@ -67,27 +68,25 @@
 	for (i = 0; (fallback = vips__profile_fallback_table[i]); i++)
 		if (g_ascii_strcasecmp(fallback->name, name) == 0) {
 			void *data;
-			GConverter *converter;
-			GConverterResult res;
-			gsize bytes_read;
-			gsize bytes_written;
+			z_stream zs = { 0 };
 
+			/* Changed by thumbd, 2026-11-29: zlib itself rather than GIO's
+			 * GZlibDecompressor, so that a static link leaves out most of
+			 * GIO, GSettings and PCRE2.
+			 */
 			data = g_malloc0(fallback->length);
-			converter = G_CONVERTER(g_zlib_decompressor_new(
-				G_ZLIB_COMPRESSOR_FORMAT_ZLIB));
-
-			res = g_converter_convert(converter,
-				fallback->data, fallback->length,
-				data, fallback->length,
-				G_CONVERTER_INPUT_AT_END,
-				&bytes_read, &bytes_written, NULL);
-			g_object_unref(converter);
-
-			if (res == G_CONVERTER_FINISHED) {
+			zs.next_in = (Bytef *) fallback->data;
+			zs.avail_in = fallback->length;
+			zs.next_out = data;
+			zs.avail_out = fallback->length;
+			if (inflateInit(&zs) == Z_OK &&
+				inflate(&zs, Z_FINISH) == Z_STREAM_END) {
+				inflateEnd(&zs);
 				*length = fallback->length;
 				return data;
 			}
 			else {
+				inflateEnd(&zs);
 				g_free(data);
 				g_warning("fallback profile decompression failed");
 			}
PATCH
}

main() {
  local hash prefix src
  hash=$(grep -v '^ *#' "$0" | sha256sum | cut -c1-12)  # comments do not count
  prefix=${1:-$CACHE/libvips-$hash}
  if [ "$(cat "$prefix/.thumbd-recipe" 2>/dev/null)" = "$hash" ]; then
    log "reusing $prefix (recipe $hash)"; echo "$prefix"; return 0
  fi
  install_deps
  src="$CACHE/src"; mkdir -p "$src" "$prefix"
  fetch_sources "$src"
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-libvips.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  local jobs; jobs=$(nproc)
  declare -A dirs; local suite spec sum
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    dirs[${spec%%=*}]=$(unpack "$src" "${spec%%=*}" "${spec#*=}" "$sum")
  done <<<"$SOURCES"
  patch_vips "${dirs[vips]}"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"

  log "highway"
  cmake -S "${dirs[highway]}" -B "$WORK/hwy-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF \
    -DHWY_ENABLE_CONTRIB=OFF >/dev/null
  ninja -C "$WORK/hwy-build" -j "$jobs" install >/dev/null

  log "lcms2"
  (cd "${dirs[lcms2]}" && ./configure -q --prefix="$prefix" --libdir="$prefix/lib" \
     --disable-shared --enable-static --with-pic --without-jpeg --without-tiff \
   && make -s -j "$jobs" && make -s install) >/dev/null

  log "util-linux (libmount, libblkid)"
  (cd "${dirs[util-linux]}" && ./configure -q --prefix="$prefix" --libdir="$prefix/lib" \
     --disable-all-programs --enable-libmount --enable-libblkid --disable-shared \
     --enable-static --disable-nls --without-python --without-systemd --without-udev \
     --without-selinux --disable-bash-completion --disable-asciidoc \
   && make -s -j "$jobs" && make -s install) >/dev/null

  log "libvips"
  meson setup "$WORK/vips-build" "${dirs[vips]}" --prefix="$prefix" --libdir=lib \
    --buildtype=release -Ddefault_library=both -Dauto_features=disabled -Dmodules=disabled \
    -Djpeg=enabled -Dpng=enabled -Dwebp=enabled -Dexif=enabled -Dzlib=enabled \
    -Dlcms=enabled -Dhighway=enabled -Dorc=disabled -Dspng=disabled -Dnsgif=true \
    -Dppm=false -Danalyze=false -Dradiance=false -Dintrospection=disabled \
    -Dcplusplus=false -Dexamples=false -Ddoxygen=false -Dgtk_doc=false \
    -Dvapi=false -Ddeprecated=false >/dev/null
  meson compile -C "$WORK/vips-build" -j "$jobs" >/dev/null
  meson install -C "$WORK/vips-build" --quiet >/dev/null
  # lcms2's and util-linux's default CFLAGS carry -g into libvips.so: 1.1 MB
  # of the slim image. (The static binary is stripped by its link.)
  strip --strip-unneeded "$prefix"/lib/libvips.so.42.*

  mkdir -p "$prefix/share/licenses"
  for name in vips highway lcms2 util-linux; do
    mkdir -p "$prefix/share/licenses/$name"
    cp "${dirs[$name]}"/{LICENSE,COPYING}* "$prefix/share/licenses/$name/" 2>/dev/null || true
  done
  cp "${dirs[util-linux]}"/Documentation/licenses/COPYING.{LGPL,BSD}* "$prefix/share/licenses/util-linux/"
  cp "$0" "$prefix/share/licenses/build-libvips.sh"
  LD_LIBRARY_PATH="$prefix/lib" "$prefix/bin/vips" --vips-config | grep -iE 'SIMD|lcms|jpeg|png|webp|exif' >&2 || true
  echo "$hash" >"$prefix/.thumbd-recipe"
  log "done: $prefix"
  echo "$prefix"
}

main "$@"
