// Command release makes thumbd's release artefacts without a Docker daemon
// (scripts/release.sh runs it; docs/images.md, "Releases"):
//
//	release sbom -binary BIN -arch ARCH -recipe recipe.json -version V -revision R -epoch N
//	    the CycloneDX SBOM of one scratch image, on stdout
//	release image -out DIR -version V -revision R -epoch N -source URL ARCH=ROOT,SBOM...
//	    the scratch images' OCI image index, written as an OCI layout in
//	    DIR with each SBOM as an artefact referring to its image; prints
//	    the index's and each image's digest
//	release push -layout DIR -ref REGISTRY/REPO:TAG
//	    pushes DIR's index under the tag and its SBOM artefacts by digest
//	    (the registry's own credentials: docker login, or DOCKER_CONFIG)
//
// Its module is its own (scripts/release/go.mod): go-containerregistry
// stays out of the service's dependency list.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release sbom|image|push [flags]")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release, vMAJOR.MINOR.PATCH")
	revision := fs.String("revision", "", "the commit")
	epoch := fs.String("epoch", "", "SOURCE_DATE_EPOCH: every time in the artefacts (the commit's time)")
	// Each command's own flags, then one parse.
	var binary, arch, recipe, out, source, dir, ref *string
	switch args[0] {
	case "sbom":
		binary = fs.String("binary", "", "the static thumbd")
		arch = fs.String("arch", "", "its GOARCH")
		recipe = fs.String("recipe", "service/internal/buildinfo/recipe.json", "the recipe's library list")
	case "image":
		out = fs.String("out", "", "the OCI layout's directory (made anew)")
		source = fs.String("source", "https://github.com/thumbd/thumbd", "org.opencontainers.image.source")
	case "push":
		dir = fs.String("layout", "", "the OCI layout release image wrote")
		ref = fs.String("ref", "", "REGISTRY/REPO:TAG")
	default:
		return fmt.Errorf("unknown command %q: want sbom, image or push", args[0])
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "push" {
		return push(ctx, *dir, *ref, stdout)
	}
	created, err := parseEpoch(*epoch)
	if err != nil {
		return err
	}
	if args[0] == "sbom" {
		libs, err := readRecipe(*recipe)
		if err != nil {
			return err
		}
		doc, err := makeSBOM(sbomInput{Binary: *binary, Recipe: libs, Version: *version, Revision: *revision, Arch: *arch, Created: created})
		if err != nil {
			return err
		}
		_, err = stdout.Write(doc)
		return err
	}
	var platforms []platformImage
	for _, a := range fs.Args() {
		arch, rest, ok1 := strings.Cut(a, "=")
		root, sbomFile, ok2 := strings.Cut(rest, ",")
		if !ok1 || !ok2 {
			return fmt.Errorf("image: %q: want ARCH=ROOT,SBOM", a)
		}
		sbom, err := os.ReadFile(sbomFile)
		if err != nil {
			return err
		}
		platforms = append(platforms, platformImage{Arch: arch, Root: root, SBOM: sbom})
	}
	if len(platforms) == 0 || *out == "" || *version == "" {
		return fmt.Errorf("image: -out, -version and at least one ARCH=ROOT,SBOM are needed")
	}
	return writeLayout(*out, platforms, imageMeta{Version: *version, Revision: *revision, Source: *source, Created: created}, stdout)
}

func parseEpoch(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("-epoch %q: want SOURCE_DATE_EPOCH, seconds since 1970", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// writeLayout writes the index and the SBOM artefacts into dir, an OCI
// layout, and prints the digests.
func writeLayout(dir string, platforms []platformImage, meta imageMeta, stdout io.Writer) error {
	idx, err := buildIndex(platforms, meta)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": meta.Version})); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "index %s\n", digest)
	for _, pl := range platforms {
		subject, err := platformDescriptor(idx, pl.Digest)
		if err != nil {
			return err
		}
		art, err := sbomArtifact(pl.SBOM, subject, pl.Arch, meta.Created)
		if err != nil {
			return err
		}
		if err := p.AppendImage(art); err != nil {
			return err
		}
		ad, err := art.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "linux/%s %s sbom %s layer %d bytes (gzip), %d unpacked\n", pl.Arch, pl.Digest, ad, pl.Compressed, pl.Unpacked)
	}
	return nil
}

// push sends the layout's index under ref's tag, then each SBOM artefact
// by digest: ggcr files it under its subject's referrers, through the
// Referrers API or, where the registry has none, the fallback tag.
func push(ctx context.Context, dir, ref string, stdout io.Writer) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("push: -ref %q: %w", ref, err)
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return err
	}
	var artefacts []v1.Descriptor
	for _, d := range m.Manifests {
		switch d.MediaType {
		case types.OCIImageIndex:
			ii, err := root.ImageIndex(d.Digest)
			if err != nil {
				return err
			}
			if err := remote.WriteIndex(tag, ii, opts...); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "pushed %s@%s\n", tag, d.Digest)
		default:
			artefacts = append(artefacts, d)
		}
	}
	for _, d := range artefacts {
		img, err := root.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := remote.Write(tag.Context().Digest(d.Digest.String()), img, opts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s (SBOM)\n", tag.Context(), d.Digest)
	}
	return nil
}
