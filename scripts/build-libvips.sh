#!/usr/bin/env bash
# The one libvips recipe, used on the host and in both Dockerfiles' builder
# stage. Builds into PREFIX, from Debian source packages (no upstream hosts):
#   libjpeg-turbo 3.1.3 (sid)   JPEG with its SIMD (nasm), the codec of most sources
#   libspng 0.7.4 (sid)         PNG load and save (libvips prefers it to libpng)
#   libwebp 1.6.0 (sid)         WebP, with libsharpyuv
#   Highway 1.3.0 (sid)         SIMD for libvips' resize and colour code
#   lcms2 2.14 (bookworm)       colour management (CMYK JPEGs)
#   util-linux 2.38.1 (bookworm) static libmount/libblkid for static gio
#   aom 3.14.1 (sid)            AV1 encoder only (no decoder), for AVIF output
#   dav1d 1.5.4 (sid)           AV1 decoder, 8- and 16-bit, for AVIF input (ADR 0007)
#   FFmpeg 7.1.5 (trixie)       libavcodec's H.264, HEVC, VP8 and VP9 decoders and
#                               AV1 through dav1d, for video sources and HEIC;
#                               no demuxer, no filter, no encoder (ADR 0008)
#   libheif 1.19.7 (bookworm-backports) AVIF writing through aom, AVIF reading
#                               through dav1d, HEIC reading through FFmpeg's HEVC
#   libtiff 4.7.0 (trixie)      TIFF: deflate, LZW, PackBits, JPEG (libjpeg-turbo);
#                               no old-style JPEG, JBIG, LERC, LZMA, ZSTD, WebP
#   brotli 1.1.0 (trixie)       for libjxl (its boxes and encoder)
#   libjxl 0.11.2 (trixie)      JPEG XL reading, through lcms2 and Highway (libvips'
#                               saver left out: the encoder's 3.6 MB, ADR 0007)
#   libvips 8.16.1 (trixie)     static AND shared, no modules, no vips7 compat,
#                               only jpeg/png(spng)/webp/gif/exif/lcms/zlib/heif/tiff/jxl
# Every library but libvips is built static and PIC: the static libvips.a
# links them into the scratch binary, and the shared libvips.so carries them
# inside it (the slim image needs no codec package). glib, libexif, zlib and
# expat come from bookworm's -dev packages (they ship both .a and .so).
# libvips 8.18.7 (what sharp bundles) is listed in sid's source index but its
# files answer 404 on the mirror: 8.16.1 is the newest libvips to be had.
#
# Adding a library: one SOURCES line, one build_NAME function, one call in
# main, and its licence files in share/licenses (see the end of main).
#
# Usage: scripts/build-libvips.sh [PREFIX]
#   PREFIX defaults to $THUMBD_CACHE/libvips-<recipe hash> (THUMBD_CACHE
#   defaults to /var/cache/thumbd).
#   THUMBD_TARGET=arm64 on an amd64 machine cross-builds the same recipe for
#   arm64 with Debian's cross toolchain (crossbuild-essential-arm64 and the
#   arm64 -dev packages, multiarch) into $THUMBD_CACHE/libvips-arm64-<hash>:
#   CMake through a toolchain file, meson through a cross file (its test
#   programs run by qemu-user), autoconf with --host. A PREFIX holding a build of this exact
#   recipe (this file, comments aside) is reused as it is. The last line on stdout is the prefix.
#   THUMBD_NO_APT=1 skips installing build dependencies with apt-get.
#       scripts/build-libvips.sh --cached
#   prints the default PREFIX when it holds a build of this recipe (for
#   THUMBD_TARGET's architecture), and fails when it does not: builds nothing.
#   THUMBD_LIBVIPS_SEED=FILE: a seed of this exact recipe (below) gives every
#   library but libvips, which is then the only one built (the Dockerfiles'
#   builder stage, when scripts/images.sh found the host's build).
#       scripts/build-libvips.sh --seed FILE
#   writes that seed from the host's build of this recipe, if there is one
#   (and removes FILE if not): a tar of the prefix without libvips' own files,
#   byte for byte the same for the same build, so Docker's layer cache holds.
set -euo pipefail

readonly CACHE="${THUMBD_CACHE:-/var/cache/thumbd}"
readonly MIRROR="${THUMBD_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# suite package=version sha256-of-orig-tarball
readonly SOURCES="
sid libjpeg-turbo=1:3.1.3-4 3a13a5ba767dc8264bc40b185e41368a80d5d5f945944d1dbaa4b2fb0099f4e5
sid libspng=0.7.4-2 47ec02be6c0a6323044600a9221b049f63e1953faf816903e7383d4dc4234487
sid libwebp=1.6.0-0.1 e4ab7009bf0629fd11982d4c2aa83964cf244cffba7347ecd39019a9e38c4564
sid highway=1.3.0-5.1 07b3c1ba2c1096878a85a31a5b9b3757427af963b1141ca904db2f9f4afe0bc2
bookworm lcms2=2.14-2+deb12u1 28474ea6f6591c4d4cee972123587001a4e6e353412a41b3e9e82219818d5740
bookworm util-linux=2.38.1-5+deb12u3 60492a19b44e6cf9a3ddff68325b333b8b52b6c59ce3ebd6a0ecaa4c5117e84f
sid aom=3.14.1-1 4ef9882eda023582499511b845f4d4368a34c9886f545a7eea4ca20799d3c161
sid dav1d=1.5.4-1 686616b7c69eb88d44459391ab25cac13b6647a3b288835c5784e71c1514a5c5
trixie ffmpeg=7:7.1.5-0+deb13u1 de668509caf9e35e3cd162473441fdb29538c6d96ed080292b3cf9e6fc5d558f
trixie tiff=4.7.0-3+deb13u3 2b8b5c4e79cb2a4651796602e45d6179b7f18bc283feab417b8e881ef7e81862
trixie brotli=1.1.0-2+deb13u1 10973f4b4199eafa1d5735ef661ddb2ec2f97319ee9fd1824d4aabe08cff5265
trixie jpeg-xl=0.11.2-0.1~deb13u3 ab38928f7f6248e2a98cc184956021acb927b16a0dee71b4d260dc040a4320ea
bookworm-backports libheif=1.19.7-1~bpo12+1 161c042d2102665fcee3ded851c78a0eb5f2d4bfe39fba48ba6e588fd6e964f3
trixie vips=8.16.1-1+deb13u2 df960c3df02da8ae16ee19e79c9428e955d178242a8f06064e07e0c417238e6e
"
readonly BUILD_DEPS="gcc g++ make pkg-config meson ninja-build cmake nasm dpkg-dev patch xz-utils file
  libglib2.0-dev libexpat1-dev libexif-dev zlib1g-dev libffi-dev libpcre2-dev libselinux1-dev
  libblkid-dev libmount-dev"
# The cross build's: the toolchain, qemu-user for meson's test programs,
# and the arm64 builds of the -dev packages above that the target links.
readonly CROSS_DEPS="crossbuild-essential-arm64 qemu-user-static libglib2.0-dev:arm64
  libexpat1-dev:arm64 libexif-dev:arm64 zlib1g-dev:arm64 libffi-dev:arm64 libpcre2-dev:arm64
  libselinux1-dev:arm64 libblkid-dev:arm64 libmount-dev:arm64"
# CROSS_CMAKE, CROSS_MESON, CROSS_HOST: the arguments that make CMake,
# meson and configure build for the target (cross_setup); empty natively.
CROSS_CMAKE=() CROSS_MESON=() CROSS_HOST=()
STRIP=strip

# cross: true when THUMBD_TARGET names another architecture than the
# machine's; only arm64 on amd64 is set up.
cross() {
  local target=${THUMBD_TARGET:-} host
  host=$(dpkg --print-architecture)
  [ -n "$target" ] && [ "$target" != "$host" ] || return 1
  [ "$target/$host" = arm64/amd64 ] || { log "THUMBD_TARGET=$target on $host: only arm64 on amd64 cross-builds"; exit 2; }
}

# cross_setup DIR: the toolchain and cross files in DIR, and the arguments
# that name them. pkg-config finds the recipe's libraries in PREFIX and the
# system's in the arm64 multiarch directory, never the machine's own.
cross_setup() {
  cat >"$1/toolchain.cmake" <<'CMAKE'
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
CMAKE
  cat >"$1/cross.ini" <<INI
[binaries]
c = 'aarch64-linux-gnu-gcc'
cpp = 'aarch64-linux-gnu-g++'
ar = 'aarch64-linux-gnu-ar'
strip = 'aarch64-linux-gnu-strip'
pkgconfig = 'pkg-config'
exe_wrapper = 'qemu-aarch64-static'
[properties]
pkg_config_libdir = ['$PREFIX/lib/pkgconfig', '/usr/lib/aarch64-linux-gnu/pkgconfig', '/usr/share/pkgconfig']
[host_machine]
system = 'linux'
cpu_family = 'aarch64'
cpu = 'aarch64'
endian = 'little'
INI
  CROSS_CMAKE=("-DCMAKE_TOOLCHAIN_FILE=$1/toolchain.cmake")
  CROSS_MESON=(--cross-file "$1/cross.ini")
  CROSS_HOST=(--host=aarch64-linux-gnu)
  STRIP=aarch64-linux-gnu-strip
  export CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++
  export PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
}

log() { echo "build-libvips: $*" >&2; }

install_deps() {
  [ "${THUMBD_NO_APT:-0}" = 1 ] && return 0
  local missing=() pkg deps=$BUILD_DEPS
  if cross; then
    deps+=" $CROSS_DEPS"
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  fi
  for pkg in $deps; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# fetch_sources DIR SOURCES: the orig tarballs (and Debian packaging where the mirror
# has it) into DIR, through a private apt configuration with deb-src lines
# for the suites SOURCES names (the machine's own apt state is untouched).
fetch_sources() {
  local dir=$1 sources=$2 apt="$1/apt" suite spec sum need=0
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    [ -n "$(orig_tarball "$dir" "$spec")" ] || need=1
  done <<<"$sources"
  [ "$need" = 1 ] || return 0
  mkdir -p "$apt/lists/partial" "$apt/cache"
  awk 'NF { print $1 }' <<<"$sources" | sort -u | while read -r suite; do
    printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' "$MIRROR" "$suite"
  done >"$apt/sources.list"
  # The mirror's sid and trixie Release files may be past their Valid-Until
  # date (the mirror is a snapshot): the files are still checked against
  # the signed indexes and the SHA-256 pins below, so an old date is no risk.
  local o=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
           -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root
           -o Acquire::Check-Valid-Until=false -o Acquire::Check-Date=false)
  apt-get "${o[@]}" update -qq
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    # Some packages' Debian packaging (vips, libspng) answers 404 on this
    # mirror while the orig tarball is there: the orig tarball is what counts.
    (cd "$dir" && apt-get "${o[@]}" source --download-only -qq "$spec" >/dev/null 2>&1) || true
  done <<<"$sources"
}

# orig_tarball DIR NAME=VERSION -> DIR's orig tarball of that version, or
# nothing. Debian names it NAME_UPSTREAM.orig.tar.EXT (no epoch, no Debian
# revision); a signature (.asc) may lie beside it.
orig_tarball() {
  local name=${2%%=*} ver=${2#*=} f
  ver=${ver#*:}
  for f in "$1/${name}_${ver%-*}".orig.tar.{gz,xz,bz2}; do
    if [ -f "$f" ]; then echo "$f"; return 0; fi
  done
}

# unpack DIR NAME=VERSION SUM -> prints the unpacked source directory. Debian's
# patches are applied where the mirror has them (security fixes for the
# bookworm packages; packaging-only changes for the others).
unpack() {
  local dir=$1 spec=$2 sum=$3 name=${2%%=*} ver=${2#*=} orig
  ver=${ver#*:}
  orig=$(orig_tarball "$dir" "$spec")
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

# The changes to libvips' source: its built-in ICC profiles are inflated
# with zlib instead of GIO's GZlibDecompressor, whose object file drags most
# of GIO (GSettings, GApplication, PCRE2 through GRegex) into a static link;
# and no JPEG XL saver, so that libjxl's encoder (and brotli's) is never
# linked: 3.6 MB of the scratch image for an output format (ADR 0007).
patch_vips() {
  sed -i 's/^#ifdef HAVE_LIBJXL$/#ifdef THUMBD_JXL_SAVE \/* changed by thumbd: no JPEG XL saver *\//' "$1/libvips/foreign/jxlsave.c"
  sed -i '/^\tvips_foreign_save_jxl_\(file\|buffer\|target\)_get_type();$/d' "$1/libvips/foreign/foreign.c"
  if ! grep -q THUMBD_JXL_SAVE "$1/libvips/foreign/jxlsave.c" || grep -q 'save_jxl_file_get_type();' "$1/libvips/foreign/foreign.c"; then
    log "the JPEG XL saver patch no longer applies"; return 1
  fi
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

# cmake_install NAME ARGS...: a static, PIC, release build of a CMake
# project into PREFIX. PIC, so that the same archive serves the static
# binary and goes inside the shared libvips.so.
cmake_install() {
  local name=$1; shift
  cmake -S "${dirs[$name]}" -B "$WORK/$name-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_PREFIX_PATH="$PREFIX" "${CROSS_CMAKE[@]}" "$@"
  ninja -C "$WORK/$name-build" -j "$JOBS" install
}

build_libjpeg_turbo() {
  # REQUIRE_SIMD: fail rather than quietly build the plain C codec when nasm
  # is missing (the SIMD IDCT and colour conversion are the point).
  cmake_install libjpeg-turbo -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DREQUIRE_SIMD=ON \
    -DWITH_TURBOJPEG=OFF -DWITH_TOOLS=OFF -DWITH_TESTS=OFF -DWITH_JAVA=OFF
}

build_libspng() {
  meson setup "$WORK/spng-build" "${dirs[libspng]}" "${CROSS_MESON[@]}" --prefix="$PREFIX" --libdir=lib \
    --buildtype=release -Ddefault_library=static -Db_staticpic=true \
    -Dbuild_examples=false -Denable_opt=true
  meson install -C "$WORK/spng-build" --quiet
}

build_libwebp() {
  cmake_install libwebp -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF \
    -DWEBP_BUILD_DWEBP=OFF -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF \
    -DWEBP_BUILD_VWEBP=OFF -DWEBP_BUILD_WEBPINFO=OFF -DWEBP_BUILD_WEBPMUX=OFF \
    -DWEBP_BUILD_EXTRAS=OFF -DWEBP_BUILD_LIBWEBPMUX=ON
  # Only the static archive exists, so a shared link (libvips.so) needs
  # libsharpyuv as much as a static one does.
  sed -i 's/^Requires.private: libsharpyuv/Requires: libsharpyuv/' "$PREFIX/lib/pkgconfig/libwebp.pc"
}

build_highway() {
  cmake_install highway -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF -DHWY_ENABLE_CONTRIB=OFF
}

# Size flags for the AVIF libraries (docs/engine.md, "AVIF"): without them
# the scratch image grows by 9 MB. -O2 is Debian's own level for aom (its
# speed is its hand-written SIMD; -O3 gave the same ms and bytes, 1.4 MB
# more), -Os for libheif (container writing and one colour conversion per
# thumbnail), and a section per function, which thumbd's static link and
# libvips.so drop when unreferenced (--gc-sections).
readonly SECTIONS="-ffunction-sections -fdata-sections"

build_aom() {
  # The encoder only: AVIF input stays refused, so no AV1 decoder is linked.
  # 8-bit only (libvips' heifsave writes bitdepth 8 here), no denoiser, no
  # quantisation matrices (off by default in aom and libheif), no libyuv
  # or WebM (used by aom's command-line tools only).
  cmake_install aom -DENABLE_DOCS=OFF -DENABLE_EXAMPLES=OFF -DENABLE_TESTS=OFF \
    -DENABLE_TESTDATA=OFF -DENABLE_TOOLS=OFF -DENABLE_NASM=ON -DCONFIG_AV1_DECODER=0 \
    -DCONFIG_TUNE_BUTTERAUGLI=0 -DCONFIG_TUNE_VMAF=0 -DCONFIG_AV1_HIGHBITDEPTH=0 \
    -DCONFIG_DENOISE=0 -DCONFIG_QUANT_MATRIX=0 -DCONFIG_LIBYUV=0 -DCONFIG_WEBM_IO=0 \
    "-DCMAKE_C_FLAGS=$SECTIONS" "-DCMAKE_CXX_FLAGS=$SECTIONS" \
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
}

# pc_public FILE...: a static archive's private dependencies made public in
# its pkg-config file (Requires.private into Requires, Libs.private into
# Libs), so that the shared libvips.so link, which asks pkg-config without
# --static, gets them as much as the static link does.
pc_public() {
  local f
  for f in "$@"; do
    awk -F': *' '
      /^Requires(\.private)?:/ { req = req " " substr($0, index($0, ":") + 1); next }
      /^Libs(\.private)?:/     { libs = libs " " substr($0, index($0, ":") + 1); next }
      { print }
      END { print "Requires:" req; print "Libs:" libs }' "$f" >"$f.new"
    mv "$f.new" "$f"
  done
}

build_dav1d() {
  # 8- and 16-bit (10- and 12-bit AVIF), with its assembly; no tools.
  meson setup "$WORK/dav1d-build" "${dirs[dav1d]}" "${CROSS_MESON[@]}" --prefix="$PREFIX" --libdir=lib \
    --buildtype=release -Ddefault_library=static -Db_staticpic=true \
    -Dbitdepths=8,16 -Denable_asm=true -Denable_tools=false -Denable_tests=false \
    -Denable_examples=false -Dlogging=false "-Dc_args=$SECTIONS"
  meson install -C "$WORK/dav1d-build" --quiet
  pc_public "$PREFIX/lib/pkgconfig/dav1d.pc"
}

build_ffmpeg() {
  # libavcodec and libavutil, with the decoders of video sources and HEIC
  # only (ADR 0008): thumbd reads containers in Go and hands the decoders
  # packets, so no demuxer, protocol or device is built; no encoder, no
  # filter, no swscale (videodecode converts), no hardware, nothing
  # detected from the machine (no zlib, iconv, X11, ...); LGPL only (no
  # --enable-gpl or nonfree). HEVC's parser is libheif's (it splits the
  # NAL units it hands the decoder), VP9's superframe split is VP9's own.
  # With FFmpeg's assembly (nasm); pthreads for a bounded thread count.
  local cross=()
  if [[ " ${CROSS_HOST[*]:-} " == *" --host=aarch64-linux-gnu "* ]]; then
    cross=(--enable-cross-compile --arch=aarch64 --target-os=linux --cross-prefix=aarch64-linux-gnu-)
  fi
  mkdir -p "$WORK/ffmpeg-build"
  (cd "$WORK/ffmpeg-build" && "${dirs[ffmpeg]}/configure" --prefix="$PREFIX" --libdir="$PREFIX/lib" \
     "${cross[@]}" --disable-everything --disable-programs --disable-doc --disable-network \
     --disable-avdevice --disable-avformat --disable-avfilter --disable-swscale --disable-swresample \
     --disable-postproc --disable-encoders --disable-muxers --disable-demuxers --disable-protocols \
     --disable-devices --disable-hwaccels --disable-autodetect --disable-iconv --enable-pthreads \
     --enable-static --disable-shared --enable-pic --disable-debug \
     --enable-libdav1d --enable-decoder=h264,hevc,vp8,vp9,libdav1d --enable-parser=hevc \
     "--extra-cflags=$SECTIONS" \
   && make -s -j "$JOBS" && make -s install)
  grep -q 'FFMPEG_LICENSE "LGPL version 2.1 or later"' "$WORK/ffmpeg-build/config.h" ||
    { log "FFmpeg's licence is not LGPL-2.1-or-later"; return 1; }
  pc_public "$PREFIX"/lib/pkgconfig/lib{avcodec,avutil}.pc
}

build_tiff() {
  # Codecs sources use: deflate (zlib), LZW, PackBits, CCITT and JPEG (the
  # project's libjpeg-turbo). Old-style JPEG (a long CVE history), JBIG,
  # LERC, LZMA, ZSTD and WebP-in-TIFF are left out, and so are the tools.
  cmake_install tiff -Dtiff-tools=OFF -Dtiff-tests=OFF -Dtiff-contrib=OFF -Dtiff-docs=OFF \
    -Dtiff-deprecated=OFF -Dcxx=OFF -Dzlib=ON -Djpeg=ON -Dold-jpeg=OFF -Djpeg12=OFF \
    -Djbig=OFF -Dlerc=OFF -Dlzma=OFF -Dzstd=OFF -Dwebp=OFF -Dlibdeflate=OFF -Dpixarlog=OFF \
    "-DJPEG_INCLUDE_DIR=$PREFIX/include" "-DJPEG_LIBRARY=$PREFIX/lib/libjpeg.a" \
    "-DCMAKE_C_FLAGS=$SECTIONS"
  pc_public "$PREFIX/lib/pkgconfig/libtiff-4.pc"
}

build_brotli() {
  cmake_install brotli -DBROTLI_DISABLE_TESTS=ON "-DCMAKE_C_FLAGS=$SECTIONS"
  pc_public "$PREFIX"/lib/pkgconfig/libbrotli{common,dec,enc}.pc
}

build_jpeg_xl() {
  # The library (decoder and encoder) against the recipe's Highway, lcms2
  # and brotli; none of libjxl's tools, viewers, jpegli or JPEG transcoding.
  cmake_install jpeg-xl -DBUILD_TESTING=OFF -DJPEGXL_ENABLE_TOOLS=OFF -DJPEGXL_ENABLE_JPEGLI=OFF \
    -DJPEGXL_ENABLE_DOXYGEN=OFF -DJPEGXL_ENABLE_MANPAGES=OFF -DJPEGXL_ENABLE_BENCHMARK=OFF \
    -DJPEGXL_ENABLE_EXAMPLES=OFF -DJPEGXL_ENABLE_JNI=OFF -DJPEGXL_ENABLE_SJPEG=OFF \
    -DJPEGXL_ENABLE_OPENEXR=OFF -DJPEGXL_ENABLE_SKCMS=OFF -DJPEGXL_BUNDLE_LIBPNG=OFF \
    -DJPEGXL_ENABLE_TRANSCODE_JPEG=OFF -DJPEGXL_ENABLE_FUZZERS=OFF -DJPEGXL_ENABLE_DEVTOOLS=OFF \
    -DJPEGXL_ENABLE_PLUGINS=OFF -DJPEGXL_FORCE_SYSTEM_BROTLI=ON -DJPEGXL_FORCE_SYSTEM_HWY=ON \
    -DJPEGXL_FORCE_SYSTEM_LCMS2=ON "-DCMAKE_C_FLAGS=$SECTIONS" "-DCMAKE_CXX_FLAGS=$SECTIONS"
  pc_public "$PREFIX"/lib/pkgconfig/libjxl{,_cms,_threads}.pc
}

build_libheif() {
  # AVIF writing through aom; AVIF reading through dav1d (ADR 0007) and
  # HEIC reading through FFmpeg's HEVC decoder (ADR 0008: faster than
  # libde265, and one HEVC decoder in the binary); no other codec, no
  # plugins loaded at run time. aom rather than SVT-AV1 to write: 2.5-4x faster on a 256x256
  # thumbnail at equal bytes and SSIM (docs/engine.md, "AVIF").
  # Its plugins are registered by heif_init (libvips calls it before its
  # first HEIF load or save) instead of by a static constructor at process
  # start, where registering a decoder may do work (libde265 built its
  # scan orders and context tables: 1.5 ms of every exec of thumbd,
  # /health included; ADR 0007, "Start-up").
  local src=${dirs[libheif]}/libheif
  sed -i -e 's/^static class Register_Default_Plugins$/class Register_Default_Plugins/' \
    -e 's/^} dummy;$/}; \/\/ changed by thumbd: no instance, heif_init registers the plugins/' "$src/plugin_registry.cc"
  sed -i 's/^static bool default_plugins_registered = true;.*$/static bool default_plugins_registered = false; \/\/ changed by thumbd: registered by heif_init/' "$src/init.cc"
  grep -q 'changed by thumbd: no instance' "$src/plugin_registry.cc" && grep -q 'changed by thumbd: registered by heif_init' "$src/init.cc" ||
    { log "the libheif start-up patch no longer applies"; return 1; }
  # Its FFmpeg plugin hands over 8-bit pictures and 10-bit 4:2:0 only: a
  # camera's 10-bit 4:2:2 HEIF (Canon's, Sony's), which libde265 read, was
  # "Pixel format not implemented". Every planar YUV or grey format of 8
  # to 16 bits is handed over as FFmpeg's pixel format descriptor says
  # (libheif converts them as it did libde265's).
  perl -0pi -e "$(cat <<'PERL'
s{static heif_chroma ffmpeg_get_chroma_format\(enum AVPixelFormat pix_fmt\) \{.*?\n\}\n}{static heif_chroma ffmpeg_get_chroma_format(enum AVPixelFormat pix_fmt) {
    // changed by thumbd: every planar YUV or grey format of 8 to 16 bits,
    // little-endian, as FFmpeg's pixel format descriptor says
    const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(pix_fmt);
    if (!d || (d->flags & (AV_PIX_FMT_FLAG_BE | AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_ALPHA | AV_PIX_FMT_FLAG_FLOAT | AV_PIX_FMT_FLAG_BITSTREAM)) ||
        d->comp[0].depth < 8 || d->comp[0].depth > 16 || d->comp[0].shift != 0)
        return heif_chroma_undefined;
    if (d->nb_components == 1)
        return heif_chroma_monochrome;
    if (d->nb_components != 3 || !(d->flags & AV_PIX_FMT_FLAG_PLANAR))
        return heif_chroma_undefined;
    if (d->log2_chroma_w == 1 && d->log2_chroma_h == 1)
        return heif_chroma_420;
    if (d->log2_chroma_w == 1 && d->log2_chroma_h == 0)
        return heif_chroma_422;
    if (d->log2_chroma_w == 0 && d->log2_chroma_h == 0)
        return heif_chroma_444;
    return heif_chroma_undefined;
}
}s;
s{int bpp = \(hevc_dec_ctx->pix_fmt == AV_PIX_FMT_YUV420P10LE\) \? 10 : 8;}{int bpp = av_pix_fmt_desc_get(hevc_dec_ctx->pix_fmt)->comp[0].depth; // changed by thumbd: the format's depth};
s{(#include <libavcodec/avcodec.h>)}{$1\n    #include <libavutil/pixdesc.h> // changed by thumbd};
PERL
)" "$src/plugins/decoder_ffmpeg.cc"
  [ "$(grep -c 'changed by thumbd' "$src/plugins/decoder_ffmpeg.cc")" = 3 ] ||
    { log "the libheif FFmpeg pixel format patch no longer applies"; return 1; }
  cmake_install libheif -DWITH_AOM_ENCODER=ON -DWITH_AOM_DECODER=OFF -DWITH_SvtEnc=OFF \
    -DWITH_DAV1D=ON -DWITH_DAV1D_PLUGIN=OFF -DWITH_LIBDE265=OFF -DWITH_FFMPEG_DECODER=ON \
    -DWITH_FFMPEG_DECODER_PLUGIN=OFF \
    -DWITH_X265=OFF -DWITH_RAV1E=OFF -DWITH_KVAZAAR=OFF \
    -DWITH_JPEG_DECODER=OFF -DWITH_JPEG_ENCODER=OFF -DWITH_OpenJPEG_DECODER=OFF \
    -DWITH_OpenJPEG_ENCODER=OFF -DWITH_OPENJPH_ENCODER=OFF \
    -DWITH_OpenH264_DECODER=OFF -DWITH_VVDEC=OFF -DWITH_VVENC=OFF -DWITH_UNCOMPRESSED_CODEC=OFF \
    -DWITH_HEADER_COMPRESSION=OFF -DWITH_LIBSHARPYUV=OFF -DWITH_GDK_PIXBUF=OFF \
    -DWITH_EXAMPLES=OFF -DBUILD_TESTING=OFF -DENABLE_PLUGIN_LOADING=OFF \
    "-DCMAKE_C_FLAGS=$SECTIONS" "-DCMAKE_CXX_FLAGS=$SECTIONS" \
    "-DCMAKE_C_FLAGS_RELEASE=-Os -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELEASE=-Os -DNDEBUG"
  # Static archives only: a shared link (libvips.so) needs aom as much as a
  # static one does. libheif 1.19.7's libheif.pc leaves FFmpeg out (it
  # tests a variable its FFmpeg check never sets, and would name it
  # "ffmpeg", which no .pc file is): the library it links is libavcodec.
  sed -i -e '/^Requires/s/ ffmpeg\b//' -e 's/^Requires.private:.*/& libavcodec/' "$PREFIX/lib/pkgconfig/libheif.pc"
  grep -q '^Requires.*libavcodec' "$PREFIX/lib/pkgconfig/libheif.pc" ||
    { log "libheif.pc does not name libavcodec"; return 1; }
  pc_public "$PREFIX/lib/pkgconfig/libheif.pc"
}

build_lcms2() {
  (cd "${dirs[lcms2]}" && ./configure -q "${CROSS_HOST[@]}" --prefix="$PREFIX" --libdir="$PREFIX/lib" \
     --disable-shared --enable-static --with-pic --without-jpeg --without-tiff \
   && make -s -j "$JOBS" && make -s install)
}

build_util_linux() {
  (cd "${dirs[util-linux]}" && ./configure -q "${CROSS_HOST[@]}" --prefix="$PREFIX" --libdir="$PREFIX/lib" \
     --disable-all-programs --enable-libmount --enable-libblkid --disable-shared \
     --enable-static --disable-nls --without-python --without-systemd --without-udev \
     --without-selinux --disable-bash-completion --disable-asciidoc \
   && make -s -j "$JOBS" && make -s install)
}

build_vips() {
  # --exclude-libs: the codecs linked into libvips.so stay private to it
  # (its exported API is libvips', as with Debian's shared codecs). Named one
  # by one: ALL would also hide libvips' own internal archives from its tools,
  # which then fail to link. The library is linked by the C++ driver
  # (Highway, libheif), hence cpp_link_args.
  local private=libjpeg.a:libspng.a:libwebp.a:libsharpyuv.a:libwebpmux.a:libwebpdemux.a
  private+=:liblcms2.a:libhwy.a:libheif.a:libaom.a:libdav1d.a:libavcodec.a:libavutil.a:libtiff.a
  private+=:libjxl.a:libjxl_cms.a:libjxl_threads.a:libbrotlienc.a:libbrotlidec.a:libbrotlicommon.a
  meson setup "$WORK/vips-build" "${dirs[vips]}" "${CROSS_MESON[@]}" --prefix="$PREFIX" --libdir=lib \
    --buildtype=release -Ddefault_library=both "-Dcpp_link_args=-Wl,--exclude-libs,$private -Wl,--gc-sections" \
    -Dauto_features=disabled -Dmodules=disabled \
    -Djpeg=enabled -Dspng=enabled -Dpng=disabled -Dwebp=enabled -Dexif=enabled -Dzlib=enabled \
    -Dlcms=enabled -Dhighway=enabled -Dheif=enabled -Dtiff=enabled -Djpeg-xl=enabled -Dorc=disabled -Dnsgif=true \
    -Dppm=false -Danalyze=false -Dradiance=false -Dintrospection=disabled \
    -Dcplusplus=false -Dexamples=false -Ddoxygen=false -Dgtk_doc=false \
    -Dvapi=false -Ddeprecated=false
  meson compile -C "$WORK/vips-build" -j "$JOBS"
  meson install -C "$WORK/vips-build" --quiet
  # lcms2's and util-linux's default CFLAGS carry -g into libvips.so: 1.1 MB
  # of the slim image. (The static binary is stripped by its link.)
  "$STRIP" --strip-unneeded "$PREFIX"/lib/libvips.so.42.*
}

# VIPS_OWN: libvips' own files (tar patterns), which a seed leaves out:
# libvips is always built from source, so that the prefix compiled into it
# is the builder's own and a seeded image's libvips is the unseeded one's.
readonly VIPS_OWN=('./lib/libvips*' './lib/pkgconfig/vips*.pc' './include/vips' './bin/vips*'
  './share/man/man1/vips*' './share/locale/*/LC_MESSAGES/vips*' './share/licenses/vips'
  './share/licenses/build-libvips.sh' './.thumbd-recipe')

# write_seed KEY FILE: FILE from the host's build of recipe KEY (the hash,
# after the target's ARCH- when cross-building), or no FILE when there is
# none. The seed's stamp names KEY, so that a seed never crosses
# architectures.
write_seed() {
  local key=$1 file=$2 prefix="$CACHE/libvips-$1" tmp exclude=() p
  if [ "$(cat "$prefix/.thumbd-recipe" 2>/dev/null)" != "${key##*-}" ]; then
    rm -f "$file"; log "no host build of recipe $key to seed from"; return 0
  fi
  for p in "${VIPS_OWN[@]}"; do exclude+=(--exclude="$p"); done
  echo "$key $prefix" >"$prefix/.thumbd-seed"
  tmp=$(mktemp "$file.XXXXXX")
  # Reproducible: sorted, no times, no owners; the same build gives the
  # same bytes, and Docker's COPY its cached layer.
  tar -C "$prefix" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime "${exclude[@]}" -cf "$tmp" .
  mv "$tmp" "$file"
  log "seed of recipe $key: $file ($(du -h "$file" | cut -f1))"
}

# unseed KEY: PREFIX from $THUMBD_LIBVIPS_SEED when it holds recipe KEY,
# with the paths its text files name (pkg-config, libtool, CMake) moved
# from the seed's prefix to PREFIX. Fails when there is no such seed.
unseed() {
  local key=$1 seed=${THUMBD_LIBVIPS_SEED:-} stamp old
  [ -n "$seed" ] && [ -f "$seed" ] || return 1
  stamp=$(tar -xOf "$seed" ./.thumbd-seed 2>/dev/null) || return 1
  if [ "${stamp%% *}" != "$key" ]; then
    log "the seed $seed is of recipe ${stamp%% *}, not $key: building every library"; return 1
  fi
  old=${stamp#* }
  tar -xf "$seed" -C "$PREFIX"
  grep -rlIF "$old" "$PREFIX" | xargs -r sed -i "s|$old|$PREFIX|g"
  log "libraries from the seed $seed (built at $old); libvips from source"
}

main() {
  local hash src sources=$SOURCES names
  hash=$(grep -v '^ *#' "$0" | sha256sum | cut -c1-12)  # comments do not count
  local arch=
  if cross; then arch=$THUMBD_TARGET-; fi
  if [ "${1:-}" = --seed ]; then write_seed "$arch$hash" "${2:?usage: build-libvips.sh --seed FILE}"; return; fi
  if [ "${1:-}" = --cached ]; then
    [ "$(cat "$CACHE/libvips-$arch$hash/.thumbd-recipe" 2>/dev/null)" = "$hash" ] && echo "$CACHE/libvips-$arch$hash"
    return
  fi
  PREFIX=${1:-$CACHE/libvips-$arch$hash}
  if [ "$(cat "$PREFIX/.thumbd-recipe" 2>/dev/null)" = "$hash" ]; then
    log "reusing $PREFIX (recipe $hash)"; echo "$PREFIX"; return 0
  fi
  install_deps
  src="$CACHE/src"; mkdir -p "$src" "$PREFIX"
  names="libjpeg-turbo highway lcms2 brotli jpeg-xl dav1d ffmpeg tiff libspng libwebp aom libheif util-linux vips"
  if unseed "$arch$hash"; then
    sources=$(grep ' vips=' <<<"$SOURCES"); names=vips
  fi
  fetch_sources "$src" "$sources"
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/thumbd-libvips.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  JOBS=$(nproc)
  if cross; then cross_setup "$WORK"; fi
  declare -gA dirs; local suite spec sum
  while read -r suite spec sum; do
    [ -n "$suite" ] || continue
    dirs[${spec%%=*}]=$(unpack "$src" "$spec" "$sum")
  done <<<"$sources"
  patch_vips "${dirs[vips]}"
  export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

  local name
  for name in $names; do
    log "$name"
    # In the background so that set -e holds inside (it is off in a
    # function run on the left of ||); its output is shown only on failure.
    "build_${name//-/_}" >"$WORK/$name.log" 2>&1 &
    wait $! || { tail -40 "$WORK/$name.log" >&2; log "$name failed"; return 1; }
  done

  mkdir -p "$PREFIX/share/licenses"
  for name in "${!dirs[@]}"; do
    mkdir -p "$PREFIX/share/licenses/$name"
    cp "${dirs[$name]}"/{LICENSE,COPYING,PATENTS,README.ijg}* "$PREFIX/share/licenses/$name/" 2>/dev/null || true
  done
  [ -z "${dirs[util-linux]:-}" ] || cp "${dirs[util-linux]}"/Documentation/licenses/COPYING.{LGPL,BSD}* "$PREFIX/share/licenses/util-linux/"
  # FFmpeg's GPL and LGPL-3 texts cover parts this build leaves out
  # (build_ffmpeg checks the licence): its LICENSE.md and the LGPL-2.1.
  rm -f "$PREFIX"/share/licenses/ffmpeg/COPYING.{GPLv2,GPLv3,LGPLv3}
  cp "$0" "$PREFIX/share/licenses/build-libvips.sh"
  [ -n "$arch" ] || LD_LIBRARY_PATH="$PREFIX/lib" "$PREFIX/bin/vips" --vips-config | grep -iE 'SIMD|lcms|jpeg|png|webp|exif|heif|tiff|jxl|jpeg-xl' >&2 || true
  echo "$hash" >"$PREFIX/.thumbd-recipe"
  log "done: $PREFIX"
  echo "$PREFIX"
}

main "$@"
