package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// library is one entry of service/internal/buildinfo/recipe.json: a C
// library of scripts/build-libvips.sh, as its SOURCES line pins it, with
// its name and licence as THIRD_PARTY_NOTICES.md gives them.
type library struct {
	Package string `json:"package"`
	Name    string `json:"name"`
	Suite   string `json:"suite"`
	Version string `json:"version"` // Debian's: epoch, upstream, revision
	SHA256  string `json:"sha256"`
	License string `json:"license"`
}

func readRecipe(path string) ([]library, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var libs []library
	if err := json.Unmarshal(b, &libs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(libs) == 0 {
		return nil, fmt.Errorf("%s lists no library", path)
	}
	return libs, nil
}

// upstream is a Debian version's upstream part: no epoch, no revision.
func upstream(v string) string {
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i]
	}
	return v
}

// CycloneDX 1.5, the parts this SBOM fills.
type (
	bom struct {
		BOMFormat    string       `json:"bomFormat"`
		SpecVersion  string       `json:"specVersion"`
		SerialNumber string       `json:"serialNumber"`
		Version      int          `json:"version"`
		Metadata     metadata     `json:"metadata"`
		Components   []component  `json:"components"`
		Dependencies []dependency `json:"dependencies"`
	}
	metadata struct {
		Timestamp string         `json:"timestamp"`
		Tools     map[string]any `json:"tools"`
		Component component      `json:"component"`
	}
	component struct {
		Type        string      `json:"type"`
		BOMRef      string      `json:"bom-ref"`
		Name        string      `json:"name"`
		Version     string      `json:"version"`
		Description string      `json:"description,omitempty"`
		Licenses    []license   `json:"licenses,omitempty"`
		PURL        string      `json:"purl,omitempty"`
		ExtRefs     []extRef    `json:"externalReferences,omitempty"`
		Props       []property  `json:"properties,omitempty"`
		Components  []component `json:"components,omitempty"`
	}
	license struct {
		Expression string `json:"expression"`
	}
	extRef struct {
		Type    string `json:"type"`
		URL     string `json:"url"`
		Comment string `json:"comment,omitempty"`
		Hashes  []hash `json:"hashes,omitempty"`
	}
	hash struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	}
	property struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	dependency struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	}
)

// sbomInput is what one image's SBOM is written from.
type sbomInput struct {
	Binary   string    // the static thumbd the image holds
	Recipe   []library // its C libraries
	Version  string    // the release (v1.2.3)
	Revision string    // the commit
	Arch     string    // GOARCH of the image
	Created  time.Time // SOURCE_DATE_EPOCH: the same tree, the same bytes
}

// debPURL is a Debian source package's package URL: the version with its
// epoch, the suite as the distro.
func debPURL(l library) string {
	return "pkg:deb/debian/" + l.Package + "@" + url.PathEscape(l.Version) + "?arch=source&distro=" + l.Suite
}

// goPURL is a Go module's package URL.
func goPURL(path, version string) string { return "pkg:golang/" + path + "@" + version }

// goComponent is one Go module compiled in: the module that replaces it,
// if any. A module replaced by a directory of the repository (govips'
// patched copy) keeps its upstream name and version, marked as patched:
// the directory's "(devel)" names nothing anyone could fetch.
func goComponent(d *debug.Module) component {
	m := d
	var local string
	if r := d.Replace; r != nil && (strings.HasPrefix(r.Path, "./") || strings.HasPrefix(r.Path, "../")) {
		local = strings.TrimPrefix(r.Path, "./")
	} else if r != nil {
		m = r
	}
	c := component{Type: "library", BOMRef: goPURL(m.Path, m.Version), Name: m.Path, Version: m.Version, PURL: goPURL(m.Path, m.Version)}
	if m.Sum != "" {
		c.Props = append(c.Props, property{"go:sum", m.Sum})
	}
	if local != "" {
		c.Description = m.Version + " as patched in thumbd's " + local + " (its README.md lists the changes)"
		c.Props = append(c.Props, property{"thumbd:patched-copy", local})
	}
	return c
}

// makeSBOM is the CycloneDX document of one image: the Go modules compiled
// into its binary (read from the binary, whatever its architecture) and
// every C library of the recipe with its version, licence and the recipe's
// SHA-256 of its Debian orig tarball.
func makeSBOM(in sbomInput) ([]byte, error) {
	bi, err := buildinfo.ReadFile(in.Binary)
	if err != nil {
		return nil, fmt.Errorf("sbom: %s: %w", in.Binary, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOARCH"] != in.Arch {
		return nil, fmt.Errorf("sbom: %s is built for %s, not %s", in.Binary, settings["GOARCH"], in.Arch)
	}
	var comps []component
	var refs []string
	add := func(c component) {
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	add(component{Type: "library", BOMRef: goPURL("stdlib", bi.GoVersion), Name: "stdlib", Version: bi.GoVersion,
		Description: "the Go standard library and runtime", Licenses: []license{{"BSD-3-Clause"}}, PURL: goPURL("stdlib", bi.GoVersion)})
	deps := slices.Clone(bi.Deps)
	slices.SortFunc(deps, func(a, b *debug.Module) int { return strings.Compare(a.Path, b.Path) })
	for _, d := range deps {
		add(goComponent(d))
	}
	for _, l := range in.Recipe {
		add(component{Type: "library", BOMRef: debPURL(l), Name: l.Name, Version: upstream(l.Version),
			Description: "built from the Debian source package " + l.Package + " " + l.Version + " (" + l.Suite + ") by scripts/build-libvips.sh, linked statically",
			Licenses:    []license{{l.License}}, PURL: debPURL(l),
			ExtRefs: []extRef{{Type: "source-distribution", URL: debPURL(l), Comment: "the Debian orig tarball scripts/build-libvips.sh pins",
				Hashes: []hash{{"SHA-256", l.SHA256}}}},
			Props: []property{{"debian:source-package", l.Package}, {"debian:version", l.Version}, {"debian:suite", l.Suite}}})
	}
	image := component{Type: "container", BOMRef: "thumbd-image", Name: "thumbd", Version: in.Version,
		Description: "thumbd's scratch image for linux/" + in.Arch + ": the static binary, its notices and the Mozilla CA set",
		Licenses:    []license{{"MIT"}},
		Props: []property{{"thumbd:revision", in.Revision}, {"thumbd:platform", "linux/" + in.Arch},
			{"thumbd:build-tags", settings["-tags"]}, {"thumbd:cgo", settings["CGO_ENABLED"]}, {"thumbd:main-module", bi.Main.Path}}}
	doc := bom{BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		Metadata: metadata{Timestamp: in.Created.UTC().Format(time.RFC3339),
			Tools:     map[string]any{"components": []component{{Type: "application", BOMRef: "scripts/release", Name: "thumbd scripts/release", Version: in.Version}}},
			Component: image},
		Components:   comps,
		Dependencies: []dependency{{Ref: image.BOMRef, DependsOn: refs}}}
	// The serial number is derived from the rest, so that the same tree
	// gives the same document (CycloneDX wants a UUID, not a random one).
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	sum[6] = sum[6]&0x0f | 0x50 // version 5 (name-based, SHA)
	sum[8] = sum[8]&0x3f | 0x80 // RFC 4122 variant
	doc.SerialNumber = fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	out, err := json.MarshalIndent(doc, "", "  ")
	return append(out, '\n'), err
}
