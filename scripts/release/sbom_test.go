package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// sbomOfThisTest is the SBOM release writes for this test binary (a Go
// binary like thumbd: the Go modules come from its build information) with
// the tree's recipe list.
func sbomOfThisTest(t *testing.T) bom {
	t.Helper()
	var out bytes.Buffer
	err := run(context.Background(), []string{"sbom", "-binary", os.Args[0], "-arch", runtime.GOARCH,
		"-recipe", "../../service/internal/buildinfo/recipe.json", "-version", "v1.2.3", "-revision", "0123abcd", "-epoch", "1764979200"}, &out, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var doc bom
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// The SBOM names every library scripts/build-libvips.sh pins, with the
// pinned version and SHA-256, and the licence THIRD_PARTY_NOTICES.md gives
// it (the SPDX expression its licence cell starts with).
func TestSBOMNamesEveryRecipeLibrary(t *testing.T) {
	script, err := os.ReadFile("../build-libvips.sh")
	if err != nil {
		t.Fatal(err)
	}
	notices, err := os.ReadFile("../../THIRD_PARTY_NOTICES.md")
	if err != nil {
		t.Fatal(err)
	}
	pins := regexp.MustCompile(`(?m)^([a-z0-9-]+) ([a-z0-9.+-]+)=(\S+) ([0-9a-f]{64})$`).FindAllStringSubmatch(string(script), -1)
	if len(pins) < 10 {
		t.Fatalf("%d pins found in scripts/build-libvips.sh: the test no longer reads its SOURCES", len(pins))
	}
	doc := sbomOfThisTest(t)
	byPackage := map[string]component{}
	for _, c := range doc.Components {
		for _, p := range c.Props {
			if p.Name == "debian:source-package" {
				byPackage[p.Value] = c
			}
		}
	}
	for _, p := range pins {
		suite, pkg, version, sum := p[1], p[2], p[3], p[4]
		c, ok := byPackage[pkg]
		if !ok {
			t.Errorf("the SBOM lacks %s %s, which scripts/build-libvips.sh builds", pkg, version)
			continue
		}
		if c.Version != upstream(version) || !strings.Contains(c.PURL, "/"+pkg+"@") || !strings.Contains(c.PURL, "distro="+suite) {
			t.Errorf("%s: version %q, purl %q; the recipe pins %s=%s from %s", pkg, c.Version, c.PURL, pkg, version, suite)
		}
		if len(c.ExtRefs) != 1 || len(c.ExtRefs[0].Hashes) != 1 || c.ExtRefs[0].Hashes[0] != (hash{"SHA-256", sum}) {
			t.Errorf("%s: source hashes %+v, the recipe pins %s", pkg, c.ExtRefs, sum)
		}
		row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(c.Name) + `[ ,(][^|]*\| ([^|]*) \| ` + "`([^`]*)`").FindStringSubmatch(string(notices))
		switch {
		case row == nil:
			t.Errorf("THIRD_PARTY_NOTICES.md has no row for %s (%s) with an SPDX expression", c.Name, pkg)
		case len(c.Licenses) != 1 || c.Licenses[0].Expression != row[2]:
			t.Errorf("%s: the SBOM's licence %+v, THIRD_PARTY_NOTICES.md's %q", c.Name, c.Licenses, row[2])
		case !strings.HasPrefix(row[1], c.Version+" "):
			t.Errorf("%s: the SBOM's version %s, THIRD_PARTY_NOTICES.md's %q", c.Name, c.Version, row[1])
		}
	}
}

// Every Go module compiled into the binary is a component, and the SBOM
// describes the image: its release, commit and platform.
func TestSBOMNamesTheGoModules(t *testing.T) {
	bi, err := buildinfo.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	doc := sbomOfThisTest(t)
	refs := map[string]bool{}
	for _, c := range doc.Components {
		refs[c.PURL] = true
	}
	for _, d := range bi.Deps {
		if !refs["pkg:golang/"+d.Path+"@"+d.Version] {
			t.Errorf("the SBOM lacks %s %s", d.Path, d.Version)
		}
	}
	if !refs["pkg:golang/stdlib@"+bi.GoVersion] || len(bi.Deps) == 0 {
		t.Errorf("no standard library, or a test binary without modules: %v", refs)
	}
	mc := doc.Metadata.Component
	if doc.BOMFormat != "CycloneDX" || mc.Version != "v1.2.3" || doc.Metadata.Timestamp != "2025-12-06T00:00:00Z" ||
		!strings.HasPrefix(doc.SerialNumber, "urn:uuid:") || len(doc.Dependencies) != 1 || len(doc.Dependencies[0].DependsOn) != len(doc.Components) {
		t.Errorf("document: %+v %+v", doc.Metadata, doc.Dependencies)
	}
	if again := sbomOfThisTest(t); again.SerialNumber != doc.SerialNumber {
		t.Errorf("the same input gave serial numbers %s and %s", doc.SerialNumber, again.SerialNumber)
	}
}

func TestSBOMRefusesAnotherArchitecture(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	err := run(context.Background(), []string{"sbom", "-binary", os.Args[0], "-arch", other, "-recipe", "../../service/internal/buildinfo/recipe.json",
		"-version", "v1", "-epoch", "0"}, &bytes.Buffer{}, os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "not "+other) {
		t.Errorf("a binary of another architecture: %v", err)
	}
}

// A module replaced by a directory of the repository keeps its upstream
// name and version, marked as patched; one replaced by another module is
// that module.
func TestSBOMNamesAPatchedCopy(t *testing.T) {
	patched := goComponent(&debug.Module{Path: "github.com/davidbyttow/govips/v2", Version: "v2.16.0",
		Replace: &debug.Module{Path: "./third_party/govips", Version: "(devel)"}})
	if patched.PURL != "pkg:golang/github.com/davidbyttow/govips/v2@v2.16.0" || !slices.Contains(patched.Props, property{"thumbd:patched-copy", "third_party/govips"}) ||
		!strings.Contains(patched.Description, "patched") {
		t.Errorf("a patched copy: %+v", patched)
	}
	fork := goComponent(&debug.Module{Path: "example.com/a", Version: "v1.0.0",
		Replace: &debug.Module{Path: "example.com/b", Version: "v1.0.1", Sum: "h1:x"}})
	if fork.PURL != "pkg:golang/example.com/b@v1.0.1" || !slices.Contains(fork.Props, property{"go:sum", "h1:x"}) || fork.Description != "" {
		t.Errorf("a module replaced by another: %+v", fork)
	}
}
