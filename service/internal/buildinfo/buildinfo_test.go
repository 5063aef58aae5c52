package buildinfo

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// sourcesLine is one pin of scripts/build-libvips.sh's SOURCES: suite,
// package=version, the orig tarball's SHA-256.
var sourcesLine = regexp.MustCompile(`(?m)^([a-z0-9-]+) ([a-z0-9.+-]+)=(\S+) ([0-9a-f]{64})$`)

// The list compiled into the binary is the recipe's: a library added to
// SOURCES without a recipe.json entry (or a version or pin changed in one
// of them only) fails here.
func TestRecipeListIsTheRecipes(t *testing.T) {
	script, err := os.ReadFile("../../../scripts/build-libvips.sh")
	if err != nil {
		t.Fatal(err)
	}
	pins := sourcesLine.FindAllStringSubmatch(string(script), -1)
	if len(pins) < 10 {
		t.Fatalf("found %d pins in scripts/build-libvips.sh's SOURCES: the test no longer reads it", len(pins))
	}
	libs, err := Recipe()
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]Library{}
	for _, l := range libs {
		listed[l.Package] = l
	}
	for _, p := range pins {
		l, ok := listed[p[2]]
		if !ok {
			t.Errorf("scripts/build-libvips.sh pins %s=%s, which service/internal/buildinfo/recipe.json lacks: add it (its name and licence as THIRD_PARTY_NOTICES.md gives them)", p[2], p[3])
			continue
		}
		if l.Suite != p[1] || l.DebianVersion != p[3] || l.SHA256 != p[4] {
			t.Errorf("recipe.json has %s %s=%s %s, the recipe %s %s=%s %s", l.Suite, l.Package, l.DebianVersion, l.SHA256, p[1], p[2], p[3], p[4])
		}
		delete(listed, p[2])
	}
	for name := range listed {
		t.Errorf("recipe.json lists %s, which scripts/build-libvips.sh does not build", name)
	}
}

// Each library's row of THIRD_PARTY_NOTICES.md starts with the name
// recipe.json gives it, its version cell with the upstream version, and its
// licence cell with the SPDX expression, in backquotes.
func TestRecipeListMatchesTheNotices(t *testing.T) {
	notices, err := os.ReadFile("../../../THIRD_PARTY_NOTICES.md")
	if err != nil {
		t.Fatal(err)
	}
	libs, err := Recipe()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(l.Name) + `[ ,(][^|]*\| ([^|]*) \| ([^|]*) \|`).FindStringSubmatch(string(notices))
		if row == nil {
			t.Errorf("THIRD_PARTY_NOTICES.md has no row for %s (%s)", l.Name, l.Package)
			continue
		}
		if !strings.HasPrefix(row[1], l.Version+" ") || !strings.Contains(row[1], l.Suite) {
			t.Errorf("THIRD_PARTY_NOTICES.md gives %s %q; the recipe %s from %s", l.Name, row[1], l.Version, l.Suite)
		}
		if !strings.HasPrefix(row[2], "`"+l.License+"`") {
			t.Errorf("THIRD_PARTY_NOTICES.md gives %s the licence %q; recipe.json `%s`", l.Name, row[2], l.License)
		}
	}
}

func TestSplitDebianVersion(t *testing.T) {
	for v, want := range map[string][2]string{
		"1:3.1.3-4":          {"3.1.3", "4"},
		"0.11.2-0.1~deb13u3": {"0.11.2", "0.1~deb13u3"},
		"1.19.7-1~bpo12+1":   {"1.19.7", "1~bpo12+1"},
		"1.0":                {"1.0", ""},
		"2:1.2-3-4":          {"1.2-3", "4"},
	} {
		if up, rev := SplitDebianVersion(v); up != want[0] || rev != want[1] {
			t.Errorf("SplitDebianVersion(%q) = %q, %q; want %q, %q", v, up, rev, want[0], want[1])
		}
	}
}

func TestRead(t *testing.T) {
	recipe, err := Recipe()
	if err != nil {
		t.Fatal(err)
	}
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		name       string
		l          linked
		bi         *debug.BuildInfo
		version    string
		revision   string
		flavour    string
		libraries  int
		wantErrSub string
	}{
		{"go build, no stamp", linked{}, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"dev", "unknown", "dynamic", 0, ""},
		{"go build with Go's VCS stamp", linked{}, stamped, "dev", "abc123-dirty", "dynamic", 0, ""},
		{"go install at a version", linked{}, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"v1.2.3", "unknown", "dynamic", 0, ""},
		{"scripts/build.sh static", linked{"v1.2.3", "def456", "static", "99db79ce6448"}, stamped,
			"v1.2.3", "def456", "static", len(recipe), ""},
		{"scripts/build.sh slim", linked{"v1.2.3", "def456", "slim", "99db79ce6448"}, nil,
			"v1.2.3", "def456", "slim", len(recipe), ""},
		{"scripts/build.sh dynamic", linked{"v1.2.3", "def456", "dynamic", ""}, nil,
			"v1.2.3", "def456", "dynamic", 0, ""},
		{"a recipe flavour without its hash", linked{"v1.2.3", "def456", "static", ""}, nil,
			"", "", "", 0, "without a recipe hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			info, err := read(c.l, c.bi)
			if c.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErrSub) {
					t.Fatalf("err %v, want one saying %q", err, c.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Version != c.version || info.Revision != c.revision || info.Flavour != c.flavour || len(info.Libraries) != c.libraries {
				t.Errorf("got %s %s %s with %d libraries; want %s %s %s with %d", info.Version, info.Revision, info.Flavour,
					len(info.Libraries), c.version, c.revision, c.flavour, c.libraries)
			}
			if info.GoVersion == "" || info.Platform == "" {
				t.Errorf("no Go version or platform: %+v", info)
			}
		})
	}
}
