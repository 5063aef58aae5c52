#!/usr/bin/env bash
# Makes a release's artefacts, the steps .github/workflows/release.yml runs
# on a tag (docs/images.md, "Releases"). Everything lands in out/release/.
# Usage: scripts/release.sh [--dry-run] STEP... VERSION
#   notes     CHANGELOG.md's section for VERSION (vMAJOR.MINOR.PATCH), into
#             notes.md: the release's notes; no section, no release
#   binaries  ARCH/thumbd-static for each of $THUMBD_RELEASE_ARCHES
#             (default: amd64 arm64; arm64 cross-built, docs/images.md)
#   image     per ARCH: root/ (the static binary, its notices, the CA set)
#             and thumbd-linux-ARCH.cdx.json (CycloneDX SBOM); then oci/,
#             the scratch images' OCI image index as an OCI layout, each
#             SBOM an artefact referring to its image, built by
#             scripts/release (go-containerregistry) without a Docker
#             daemon; the digests in digests.txt
#   push      (network) the index to $THUMBD_IMAGE:X.Y.Z-scratch with its
#             SBOMs, signed keyless with cosign, each SBOM attested too;
#             the GitHub release with notes.md and the SBOMs
#   chart     chart/: k8s/chart with version, appVersion and image.tag
#             X.Y.Z, image.digests.scratch the index's digest and
#             image.digests.slim $THUMBD_SLIM_DIGEST (the slim index's, when
#             given); pushed to oci://$THUMBD_CHARTS (network)
# --dry-run: every step runs but what needs the network (push and sign,
# the GitHub release, the chart's push), which is printed instead; a
# VERSION with no CHANGELOG.md section takes [Unreleased]'s notes.
# Env: THUMBD_IMAGE (REGISTRY/OWNER/thumbd), THUMBD_CHARTS (REGISTRY/OWNER/charts),
#      SOURCE_DATE_EPOCH (default: the commit's time), THUMBD_LOCK=0 to
#      build without /tmp/thumbd-build.lock.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly OUTDIR=out/release
readonly SEMVER='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
DRY_RUN=0

log() { echo "release: $*" >&2; }

# net CMD...: runs CMD, or prints it in a dry run.
net() {
  if [ "$DRY_RUN" = 1 ]; then printf 'release: dry run, not run:'; printf ' %q' "$@"; echo; else "$@"; fi
}

# changelog_section VERSION: the lines under CHANGELOG.md's "## [X.Y.Z]"
# heading (a date may follow it), up to the next "## " heading.
changelog_section() {
  awk -v v="${1#v}" '
    /^## / { inside = (index($0, "## [" v "]") == 1); next }
    inside' CHANGELOG.md | sed -e '/./,$!d'
}

step_notes() {
  local notes
  notes=$(changelog_section "$VERSION")
  if [ -z "$notes" ]; then
    if [ "$DRY_RUN" = 0 ]; then
      log "CHANGELOG.md has no section ## [${VERSION#v}]: write it (moving [Unreleased]'s entries), then tag"; return 1
    fi
    log "dry run: no section ## [${VERSION#v}] in CHANGELOG.md, [Unreleased]'s notes instead"
    notes=$(changelog_section Unreleased)
  fi
  [ -n "$notes" ] || { log "CHANGELOG.md: the section is empty"; return 1; }
  printf '%s\n' "$notes" >"$OUTDIR/notes.md"
  log "$OUTDIR/notes.md: $(wc -l <"$OUTDIR/notes.md") lines"
}

# locked CMD...: CMD under the build lock (a heavy build at a time).
locked() {
  if [ "${THUMBD_LOCK:-1}" = 1 ]; then flock /tmp/thumbd-build.lock "$@"; else "$@"; fi
}

step_binaries() {
  local arch
  for arch in $ARCHES; do
    mkdir -p "$OUTDIR/$arch"
    log "linux/$arch: scripts/build.sh static"
    locked env THUMBD_VERSION="$VERSION" THUMBD_TARGET="$arch" OUT="$OUTDIR/$arch" scripts/build.sh static
  done
}

# release_tool ARGS...: scripts/release, built from its own module (go's
# build cache makes a rebuild of an unchanged tool cost nothing).
release_tool() {
  [ -x "$OUTDIR/tool/release" ] || (cd scripts/release && CGO_ENABLED=0 go build -trimpath -o "../../$OUTDIR/tool/release" .)
  "$OUTDIR/tool/release" "$@"
}

# root ARCH: the scratch image's files, as Dockerfile.scratch lays them out.
root() {
  local arch=$1 dir="$OUTDIR/$1/root" prefix
  rm -rf "$dir"
  mkdir -p "$dir/etc/ssl/certs" "$dir/usr/share/doc"
  cp "$OUTDIR/$arch/thumbd-static" "$dir/thumbd"
  prefix=$(THUMBD_TARGET="$arch" scripts/build.sh vips-prefix)
  scripts/notices.sh "$dir/usr/share/doc/thumbd" "$prefix"
  # Over 1 KB, gzip'ed as in Dockerfile.scratch (-n: no name, no time).
  find "$dir/usr/share/doc/thumbd" -type f -size +1k ! -name THIRD_PARTY_NOTICES.md ! -name thumbd.LICENSE -exec gzip -9n {} +
  cat /usr/share/ca-certificates/mozilla/*.crt >"$dir/etc/ssl/certs/ca-certificates.crt"
}

step_image() {
  local arch platforms=()
  rm -f "$OUTDIR/tool/release"
  for arch in $ARCHES; do
    root "$arch"
    release_tool sbom -binary "$OUTDIR/$arch/root/thumbd" -arch "$arch" -version "$VERSION" \
      -revision "$REVISION" -epoch "$EPOCH" >"$OUTDIR/thumbd-linux-$arch.cdx.json"
    platforms+=("$arch=$OUTDIR/$arch/root,$OUTDIR/thumbd-linux-$arch.cdx.json")
  done
  release_tool image -out "$OUTDIR/oci" -version "$VERSION" -revision "$REVISION" -epoch "$EPOCH" \
    "${platforms[@]}" | tee "$OUTDIR/digests.txt" >&2
}

index_digest() { awk '$1 == "index" { print $2 }' "$OUTDIR/digests.txt"; }

step_push() {
  : "${THUMBD_IMAGE:?THUMBD_IMAGE: REGISTRY/OWNER/thumbd}"
  local digest arch line
  digest=$(index_digest)
  net "$OUTDIR/tool/release" push -layout "$OUTDIR/oci" -ref "$THUMBD_IMAGE:${VERSION#v}-scratch"
  # Keyless: the workflow's OIDC identity, recorded in Rekor. --recursive
  # signs the index and each platform's image.
  net cosign sign --yes --recursive "$THUMBD_IMAGE@$digest"
  for arch in $ARCHES; do
    line=$(awk -v p="linux/$arch" '$1 == p { print $2 }' "$OUTDIR/digests.txt")
    net cosign attest --yes --type cyclonedx --predicate "$OUTDIR/thumbd-linux-$arch.cdx.json" "$THUMBD_IMAGE@$line"
  done
  net gh release create "$VERSION" --title "thumbd $VERSION" --notes-file "$OUTDIR/notes.md" \
    "$OUTDIR/digests.txt" "$OUTDIR"/thumbd-linux-*.cdx.json
}

step_chart() {
  : "${THUMBD_IMAGE:?THUMBD_IMAGE: REGISTRY/OWNER/thumbd}"
  local digest dir="$OUTDIR/chart/thumbd" helm
  digest=$(index_digest)
  rm -rf "$OUTDIR/chart" && mkdir -p "$OUTDIR/chart" && cp -r k8s/chart "$dir"
  sed -i -e "s/^version: .*/version: ${VERSION#v}/" -e "s/^appVersion: .*/appVersion: \"${VERSION#v}\"/" "$dir/Chart.yaml"
  # The image block's defaults become the release's (k8s/chart/values.yaml).
  sed -i -e "0,/^  repository: .*/s||  repository: $THUMBD_IMAGE|" -e "0,/^  tag: .*/s||  tag: \"${VERSION#v}\"|" \
    -e "0,/^    scratch: .*/s||    scratch: \"$digest\"|" -e "0,/^    slim: .*/s||    slim: \"${THUMBD_SLIM_DIGEST:-}\"|" "$dir/values.yaml"
  helm=$(scripts/build-helm.sh | tail -1)
  "$helm" lint "$dir" >/dev/null
  # The released chart's scratch image is the index, by digest.
  "$helm" template thumbd "$dir" --set image.flavour=scratch | grep -qx " *image: $THUMBD_IMAGE@$digest" ||
    { log "the released chart does not pin the scratch image to $digest"; return 1; }
  "$helm" package "$dir" -d "$OUTDIR/chart" >&2
  net "$helm" push "$OUTDIR/chart/thumbd-${VERSION#v}.tgz" "oci://${THUMBD_CHARTS:?THUMBD_CHARTS: REGISTRY/OWNER/charts}"
}

main() {
  if [ "${1:-}" = --dry-run ]; then DRY_RUN=1; shift; fi
  [ $# -ge 2 ] || { sed -n '2,28p' "$0" >&2; return 2; }
  VERSION=${*: -1}
  [[ "$VERSION" =~ $SEMVER ]] || { log "$VERSION is no semver tag (vMAJOR.MINOR.PATCH)"; return 2; }
  ARCHES=${THUMBD_RELEASE_ARCHES:-amd64 arm64}
  REVISION=$(git rev-parse HEAD)
  EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
  mkdir -p "$OUTDIR"
  local s
  for s in "${@:1:$#-1}"; do
    case "$s" in
      notes|binaries|image|push|chart) log "$s $VERSION"; "step_$s" ;;
      *) log "unknown step: $s"; return 2 ;;
    esac
  done
}

main "$@"
