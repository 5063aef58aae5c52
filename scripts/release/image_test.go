package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// tree lays out a root file system like scripts/release.sh's: the binary,
// a notice, the CA set.
func tree(t *testing.T, binary string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range map[string]string{
		"thumbd": binary, "usr/share/doc/thumbd/THIRD_PARTY_NOTICES.md": "notices\n",
		"etc/ssl/certs/ca-certificates.crt": "certs\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "thumbd"), 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

var digestLine = regexp.MustCompile(`(?m)^index (sha256:[0-9a-f]{64})$`)

func buildLayout(t *testing.T, dir string, roots map[string]string) string {
	t.Helper()
	sbom := filepath.Join(t.TempDir(), "sbom.json")
	if err := os.WriteFile(sbom, []byte(`{"bomFormat":"CycloneDX"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"image", "-out", dir, "-version", "v1.2.3", "-revision", "0123abcd", "-epoch", "1764979200"}
	for _, arch := range []string{"amd64", "arm64"} {
		if root, ok := roots[arch]; ok {
			args = append(args, arch+"="+root+","+sbom)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	m := digestLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no index digest in %q", out.String())
	}
	return m[1]
}

// The same tree gives the same index twice, whatever the checkout left in
// the files' times and modes; another binary gives another one.
func TestIndexIsReproducible(t *testing.T) {
	a, b := tree(t, "binary for amd64"), tree(t, "binary for arm64")
	first := buildLayout(t, filepath.Join(t.TempDir(), "oci"), map[string]string{"amd64": a, "arm64": b})

	// A later checkout of the same tree: other times, other modes.
	later := time.Now().Add(time.Hour)
	filepath.Walk(a, func(path string, _ os.FileInfo, _ error) error { return os.Chtimes(path, later, later) })
	if err := os.Chmod(filepath.Join(a, "usr/share/doc/thumbd/THIRD_PARTY_NOTICES.md"), 0o664); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(a, "thumbd"), 0o775); err != nil {
		t.Fatal(err)
	}
	second := buildLayout(t, filepath.Join(t.TempDir(), "oci"), map[string]string{"amd64": a, "arm64": b})
	if first != second {
		t.Errorf("the same tree gave %s, then %s", first, second)
	}
	other := buildLayout(t, filepath.Join(t.TempDir(), "oci"), map[string]string{"amd64": tree(t, "another binary"), "arm64": b})
	if other == first {
		t.Errorf("another binary gave the same index %s", first)
	}
}

// The layout holds the index (two platforms, annotated with the release)
// and one SBOM artefact per image, referring to it.
func TestLayoutHoldsIndexAndSBOMs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oci")
	digest := buildLayout(t, dir, map[string]string{"amd64": tree(t, "x"), "arm64": tree(t, "y")})
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 3 || m.Manifests[0].Digest.String() != digest {
		t.Fatalf("layout's entries: %+v", m.Manifests)
	}
	idx, err := root.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// Every digest, size and diff ID what its bytes give, as a
	// registry or a runtime will check them.
	if err := validate.Index(idx); err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.Annotations["org.opencontainers.image.version"] != "v1.2.3" || len(im.Manifests) != 2 ||
		im.Manifests[0].Platform.Architecture != "amd64" || im.Manifests[1].Platform.Architecture != "arm64" || im.Manifests[1].Platform.Variant != "v8" {
		t.Fatalf("index: %+v", im)
	}
	img, err := idx.Image(im.Manifests[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" || strings.Join(cfg.Config.Entrypoint, " ") != "/thumbd" ||
		cfg.Created.Unix() != 1764979200 || cfg.Config.Labels["org.opencontainers.image.revision"] != "0123abcd" {
		t.Errorf("config: %+v", cfg)
	}
	for i, d := range m.Manifests[1:] {
		art, err := root.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		am, err := art.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if am.ArtifactType != sbomMediaType || am.Subject == nil || am.Subject.Digest != im.Manifests[i].Digest || len(am.Layers) != 1 {
			t.Errorf("artefact %d: %+v", i, am)
		}
		layers, err := art.Layers()
		if err != nil {
			t.Fatal(err)
		}
		rc, err := layers[0].Compressed()
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.NewDecoder(rc).Decode(&doc); err != nil || doc["bomFormat"] != "CycloneDX" {
			t.Errorf("artefact %d's blob: %v %v", i, doc, err)
		}
		rc.Close()
	}
}

func TestImageRefusesWhatIsNoFile(t *testing.T) {
	root := tree(t, "x")
	if err := os.Symlink("thumbd", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"image", "-out", filepath.Join(t.TempDir(), "oci"), "-version", "v1", "-epoch", "0", "amd64=" + root + ",/dev/null"}, os.Stdout, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "only files and directories") {
		t.Errorf("a symlink in the tree: %v", err)
	}
	if err := run(context.Background(), []string{"image", "-out", "x", "-version", "v1", "-epoch", "yesterday", "amd64=a,b"}, os.Stdout, os.Stderr); err == nil {
		t.Errorf("-epoch yesterday: no error")
	}
}

// push sends the index under its tag and each SBOM where the registry
// lists it among its image's referrers: through the Referrers API, and
// through the fallback tag where the registry has none.
func TestPushFilesSBOMsUnderTheirImages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oci")
	digest := buildLayout(t, dir, map[string]string{"amd64": tree(t, "x"), "arm64": tree(t, "y")})
	for kind, opts := range map[string][]registry.Option{"referrers API": {registry.WithReferrersSupport(true)}, "fallback tag": nil} {
		t.Run(kind, func(t *testing.T) {
			srv := httptest.NewServer(registry.New(append(opts, registry.Logger(log.New(io.Discard, "", 0)))...))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			var out bytes.Buffer
			if err := run(context.Background(), []string{"push", "-layout", dir, "-ref", host + "/thumbd:1.2.3-scratch"}, &out, os.Stderr); err != nil {
				t.Fatal(err)
			}
			tag, err := name.NewTag(host + "/thumbd:1.2.3-scratch")
			if err != nil {
				t.Fatal(err)
			}
			got, err := remote.Index(tag)
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := got.Digest(); d.String() != digest {
				t.Fatalf("the tag names %s, the layout's index is %s", d, digest)
			}
			im, _ := got.IndexManifest()
			for _, m := range im.Manifests {
				refs, err := remote.Referrers(tag.Context().Digest(m.Digest.String()))
				if err != nil {
					t.Fatal(err)
				}
				rm, _ := refs.IndexManifest()
				if len(rm.Manifests) != 1 {
					t.Fatalf("%s's referrers: %+v", m.Platform.Architecture, rm.Manifests)
				}
				// The listing's artifactType is the registry's to fill
				// (ggcr's own test registry gives the config's media
				// type): the manifest's is what was pushed.
				art, err := remote.Image(tag.Context().Digest(rm.Manifests[0].Digest.String()))
				if err != nil {
					t.Fatal(err)
				}
				if am, err := art.Manifest(); err != nil || am.ArtifactType != sbomMediaType || am.Subject.Digest != m.Digest {
					t.Errorf("%s's referrer: %+v %v", m.Platform.Architecture, am, err)
				}
			}
		})
	}
}

func TestPushRefusesABadReference(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oci")
	buildLayout(t, dir, map[string]string{"amd64": tree(t, "x")})
	for _, ref := range []string{"", "thumbd", "Registry.Example/UPPER:tag"} {
		if err := run(context.Background(), []string{"push", "-layout", dir, "-ref", ref}, io.Discard, io.Discard); err == nil {
			t.Errorf("-ref %q: no error", ref)
		}
	}
	if err := run(context.Background(), []string{"push", "-layout", t.TempDir(), "-ref", "127.0.0.1:1/thumbd:1"}, io.Discard, io.Discard); err == nil {
		t.Errorf("a directory that is no OCI layout: no error")
	}
	if err := run(context.Background(), []string{"publish"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("an unknown command: %v", err)
	}
}

// TestImageEnvIsDockerfileScratch: the release image runs with the
// environment the scratch image built by Docker has.
func TestImageEnvIsDockerfileScratch(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile.scratch")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for line := range strings.Lines(string(b)) {
		if kv, ok := strings.CutPrefix(strings.TrimSpace(line), "ENV "); ok {
			want = append(want, kv)
		}
	}
	if got := imageEnv(); !slices.Equal(got, want) {
		t.Errorf("imageEnv() = %q,\nDockerfile.scratch's ENV = %q", got, want)
	}
}
