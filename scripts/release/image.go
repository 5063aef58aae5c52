package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageEnv is the image's environment: Dockerfile.scratch's ENV lines,
// which say why (TestImageEnvIsDockerfileScratch holds them equal): 2
// malloc arenas, malloc's thresholds and huge pages, and cells that refuse
// to start with fewer sandbox layers than asked.
func imageEnv() []string {
	return []string{"MALLOC_ARENA_MAX=2",
		"GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864",
		"THUMBD_SANDBOX_REQUIRED=true"}
}

// platformImage is one architecture's scratch image: a root file system
// (the static binary at /thumbd, the notices, the CA set), laid out by
// scripts/release.sh, and the SBOM that describes it.
type platformImage struct {
	Arch string
	Root string
	SBOM []byte
	// Set by buildIndex: the image's digest, and its layer's size
	// gzip'ed (what a pull downloads) and unpacked.
	Digest               v1.Hash
	Compressed, Unpacked int64
}

// imageMeta is what every image and the index say of the release.
type imageMeta struct {
	Version  string
	Revision string
	Source   string
	Created  time.Time
}

// layerTar is root as one tar layer, the same bytes for the same tree:
// entries sorted by name, every parent directory listed, owner root,
// every time the release's time, modes 0755 for directories and
// executables and 0644 for the rest, whatever the checkout left on disk.
func layerTar(root string, created time.Time) ([]byte, error) {
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return fmt.Errorf("%s: only files and directories go into the image", path)
		}
		names = append(names, path)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, path := range names {
		info, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: created, Uid: 0, Gid: 0, Format: tar.FormatPAX}
		switch {
		case info.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		case info.Mode()&0o111 != 0:
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o755, info.Size()
		default:
			h.Typeflag, h.Size = tar.TypeReg, info.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			f, err := os.Open(path)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// scratchImage is Dockerfile.scratch's final stage, made without a daemon:
// the same entrypoint, user, environment, port, health check and labels.
func scratchImage(p *platformImage, meta imageMeta) (v1.Image, error) {
	raw, err := layerTar(p.Root, meta.Created)
	if err != nil {
		return nil, err
	}
	p.Unpacked = int64(len(raw))
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: meta.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "thumbd",
		"org.opencontainers.image.description": "HTTP thumbnail service (libvips), static build",
		"org.opencontainers.image.source":      meta.Source,
		"org.opencontainers.image.licenses":    "see /usr/share/doc/thumbd/THIRD_PARTY_NOTICES.md",
		"org.opencontainers.image.version":     meta.Version,
		"org.opencontainers.image.revision":    meta.Revision,
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Arch, OS: "linux", Variant: variant(p.Arch), Created: created,
		Config: v1.Config{
			Entrypoint:   []string{"/thumbd"},
			Env:          imageEnv(),
			User:         "65532:65532",
			ExposedPorts: map[string]struct{}{"8080/tcp": {}},
			Labels:       labels,
			Healthcheck: &v1.HealthConfig{Test: []string{"CMD", "/thumbd", "health"},
				Interval: 10 * time.Second, Timeout: 3 * time.Second, StartPeriod: 5 * time.Second},
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	if p.Compressed, err = layer.Size(); err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: created, CreatedBy: "scripts/release image (no Docker daemon)", Comment: "the static thumbd, its notices, the Mozilla CA set"}})
}

func variant(arch string) string {
	if arch == "arm64" {
		return "v8"
	}
	return ""
}

// buildIndex is the OCI image index of the platforms' scratch images, in
// the order given. It fills each platform's Digest.
func buildIndex(platforms []platformImage, meta imageMeta) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i := range platforms {
		p := &platforms[i]
		img, err := scratchImage(p, meta)
		if err != nil {
			return nil, fmt.Errorf("linux/%s: %w", p.Arch, err)
		}
		if p.Digest, err = img.Digest(); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: p.Arch, Variant: variant(p.Arch)}}})
	}
	anns := map[string]string{
		"org.opencontainers.image.version":  meta.Version,
		"org.opencontainers.image.revision": meta.Revision,
		"org.opencontainers.image.source":   meta.Source,
		"org.opencontainers.image.created":  meta.Created.UTC().Format(time.RFC3339),
	}
	return mutate.Annotations(idx, anns).(v1.ImageIndex), nil
}

// The SBOM travels as an OCI 1.1 artefact that refers to its image (its
// subject): registries list it under the image's referrers, `oras
// discover` and `cosign tree` show it. Its config is OCI's empty
// descriptor, its one layer the CycloneDX JSON.
const (
	sbomMediaType  = "application/vnd.cyclonedx+json"
	emptyMediaType = "application/vnd.oci.empty.v1+json"
)

// artifact is a manifest whose blobs are held as bytes: the SBOM
// artefact (no layer of a file system, so none of ggcr's image builders).
type artifact struct {
	manifest []byte
	blobs    map[v1.Hash]v1.Layer
}

func (a *artifact) RawConfigFile() ([]byte, error)      { return []byte("{}"), nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }
func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if l, ok := a.blobs[h]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("artifact: no blob %s", h)
}

func descriptorOf(b []byte, mt types.MediaType) v1.Descriptor {
	sum := sha256.Sum256(b)
	return v1.Descriptor{MediaType: mt, Size: int64(len(b)), Digest: v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sum)}}
}

// sbomArtifact is the SBOM of the image whose manifest is subject.
func sbomArtifact(sbom []byte, subject v1.Descriptor, arch string, created time.Time) (v1.Image, error) {
	config := descriptorOf([]byte("{}"), emptyMediaType)
	config.Data = []byte("{}")
	layer := descriptorOf(sbom, sbomMediaType)
	layer.Annotations = map[string]string{"org.opencontainers.image.title": "thumbd-linux-" + arch + ".cdx.json"}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: sbomMediaType,
		Config: config, Layers: []v1.Descriptor{layer}, Subject: &subject,
		Annotations: map[string]string{"org.opencontainers.image.created": created.UTC().Format(time.RFC3339)}}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&artifact{manifest: raw, blobs: map[v1.Hash]v1.Layer{
		layer.Digest: static.NewLayer(sbom, sbomMediaType), config.Digest: static.NewLayer([]byte("{}"), emptyMediaType)}})
}

// platformDescriptor is the index's entry for one image, the subject its
// SBOM refers to.
func platformDescriptor(idx v1.ImageIndex, digest v1.Hash) (v1.Descriptor, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, d := range m.Manifests {
		if d.Digest == digest {
			return v1.Descriptor{MediaType: d.MediaType, Size: d.Size, Digest: d.Digest}, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("index has no manifest %s", digest)
}
