// Package buildinfo is what a thumbd binary says of its own build: the
// release, the commit, the Go toolchain, and the C libraries of the libvips
// recipe (scripts/build-libvips.sh) that it links. `thumbd version` prints
// it and the thumbd_build_info and thumbd_library_info metrics carry it.
package buildinfo

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
)

// Set by scripts/build.sh with -ldflags -X, which can only set a package's
// string variables; nothing else writes them. Empty in a plain `go build`.
var (
	// version is the release: the tag, v1.2.3 (semver).
	version string
	// revision is the commit the binary was built from.
	revision string
	// flavour is scripts/build.sh's flavour: slim or static link the
	// recipe's libraries; empty (a plain go build) or dynamic link
	// Debian's libvips and its shared libraries.
	flavour string
	// recipe is the hash of the recipe whose build the binary links (the
	// prefix's name, libvips-HASH).
	recipe string
)

// recipeJSON is the recipe's library list: one entry per SOURCES line of
// scripts/build-libvips.sh, in its order, with the licence that
// THIRD_PARTY_NOTICES.md gives. Tests hold it equal to both; the release
// tool (scripts/release) writes the SBOM from the same file.
//
//go:embed recipe.json
var recipeJSON []byte

// Library is one C library of the recipe, as its SOURCES line pins it.
type Library struct {
	// Package is the Debian source package (tiff, jpeg-xl, vips).
	Package string `json:"package"`
	// Name is the library's name in THIRD_PARTY_NOTICES.md (libtiff,
	// libjxl, libvips).
	Name string `json:"name"`
	// Suite is the Debian suite the recipe takes it from.
	Suite string `json:"suite"`
	// DebianVersion is the source package's version, epoch and Debian
	// revision included: 1:3.1.3-4.
	DebianVersion string `json:"debian_version"`
	// Version is the upstream version (3.1.3), Revision the Debian
	// revision (4): derived from DebianVersion.
	Version  string `json:"version"`
	Revision string `json:"revision"`
	// SHA256 is the recipe's pin: the orig tarball's SHA-256.
	SHA256 string `json:"sha256"`
	// License is an SPDX licence expression.
	License string `json:"license"`
}

// Recipe is the recipe's library list, whatever this binary links.
func Recipe() ([]Library, error) {
	var raw []struct {
		Package, Name, Suite, Version, SHA256, License string
	}
	if err := json.Unmarshal(recipeJSON, &raw); err != nil {
		return nil, fmt.Errorf("buildinfo: recipe.json: %w", err)
	}
	libs := make([]Library, len(raw))
	for i, r := range raw {
		upstream, rev := SplitDebianVersion(r.Version)
		libs[i] = Library{Package: r.Package, Name: r.Name, Suite: r.Suite, DebianVersion: r.Version,
			Version: upstream, Revision: rev, SHA256: r.SHA256, License: r.License}
	}
	return libs, nil
}

// SplitDebianVersion is a Debian version's upstream part (epoch left out)
// and its Debian revision (after the last hyphen; none for a native package).
func SplitDebianVersion(v string) (upstream, revision string) {
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		return v[:i], v[i+1:]
	}
	return v, ""
}

// Info is a binary's build.
type Info struct {
	// Version is the release (v1.2.3), or the module's version when built
	// with go install, or "dev".
	Version string `json:"version"`
	// Revision is the commit, "-dirty" added for a changed tree when Go's
	// own VCS stamp says so, or "unknown".
	Revision string `json:"revision"`
	// GoVersion is the toolchain that built the binary; Platform its
	// GOOS/GOARCH.
	GoVersion string `json:"goversion"`
	Platform  string `json:"platform"`
	// Flavour is scripts/build.sh's flavour (dynamic, slim, static).
	Flavour string `json:"flavour"`
	// Recipe is the hash of the recipe build the binary links, "" for
	// the dynamic flavour.
	Recipe string `json:"recipe,omitempty"`
	// Libraries are the recipe's C libraries when the binary links them
	// (slim and static), none for the dynamic flavour: that one links
	// Debian's libvips and whatever Debian's shared libraries are.
	Libraries []Library `json:"libraries"`
}

// Read is this binary's build.
func Read() (Info, error) {
	bi, _ := debug.ReadBuildInfo()
	return read(linked{version: version, revision: revision, flavour: flavour, recipe: recipe}, bi)
}

// linked is what the link stamped (-X), for read and its tests.
type linked struct{ version, revision, flavour, recipe string }

func read(l linked, bi *debug.BuildInfo) (Info, error) {
	info := Info{Version: l.version, Revision: l.revision, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH, Flavour: l.flavour, Recipe: l.recipe, Libraries: []Library{}}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		// go install MODULE@VERSION stamps the module's version; a build
		// in the tree says (devel).
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		if info.Revision == "" {
			info.Revision = vcsRevision(bi.Settings)
		}
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	switch info.Flavour {
	case "":
		info.Flavour = "dynamic"
	case "slim", "static":
		if info.Recipe == "" {
			return info, fmt.Errorf("buildinfo: flavour %s without a recipe hash: scripts/build.sh sets both", info.Flavour)
		}
		libs, err := Recipe()
		if err != nil {
			return info, err
		}
		info.Libraries = libs
	}
	return info, nil
}

// vcsRevision is Go's own VCS stamp (a `go build` in a git tree without
// -buildvcs=false), "" when there is none.
func vcsRevision(settings []debug.BuildSetting) string {
	var rev string
	var modified bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += "-dirty"
	}
	return rev
}

// Collectors are the build's metrics: thumbd_build_info (libvips: the
// version linked, as libvips reports it) and thumbd_library_info.
func (i Info) Collectors(libvips string) []prometheus.Collector {
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_build_info", Help: "Build of the running thumbd (thumbd version): always 1.",
		ConstLabels: prometheus.Labels{"version": i.Version, "revision": i.Revision, "goversion": runtime.Version(),
			"flavour": i.Flavour, "libvips": libvips},
	})
	buildInfo.Set(1)
	// One series per C library of the recipe, none for the dynamic build
	// (Debian's shared libraries): a fixed set of about 14, known at build.
	libraryInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "thumbd_library_info", Help: "A C library of the libvips recipe linked into the running thumbd (thumbd version), with its upstream version and Debian revision: always 1.",
	}, []string{"library", "version", "revision"})
	for _, l := range i.Libraries {
		libraryInfo.WithLabelValues(l.Package, l.Version, l.Revision).Set(1)
	}
	return []prometheus.Collector{buildInfo, libraryInfo}
}

// Report is `thumbd version`'s: the build, and the libvips
// version the binary was compiled against (Debian's for the dynamic
// flavour, the recipe's for slim and static).
type Report struct {
	Info
	Libvips string `json:"libvips"`
}

// Print writes v as `thumbd version` shows it: text (a table of the
// recipe's libraries, when linked), or a JSON object (asJSON).
func (v Report) Print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(w, "thumbd %s (commit %s, %s, %s, %s build)\n", v.Version, v.Revision, v.GoVersion, v.Platform, v.Flavour)
	if len(v.Libraries) == 0 {
		fmt.Fprintf(w, "libvips %s and its codecs: the system's shared libraries (Debian's packages), not the recipe's\n", v.Libvips)
		return nil
	}
	fmt.Fprintf(w, "libvips %s and its codecs: scripts/build-libvips.sh, recipe %s, from Debian source packages\n", v.Libvips, v.Recipe)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "library\tversion\tdebian revision\tsuite\tsource package\tlicence")
	for _, l := range v.Libraries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Version, l.Revision, l.Suite, l.Package, l.License)
	}
	return tw.Flush()
}
