package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// staticBuild is what scripts/build.sh stamps into a static binary
// (buildinfo's own tests check the stamp's reading; the list is the
// recipe's, which buildinfo's tests hold equal to scripts/build-libvips.sh).
func staticBuild(t *testing.T) buildinfo.Info {
	t.Helper()
	libs, err := buildinfo.Recipe()
	if err != nil {
		t.Fatal(err)
	}
	return buildinfo.Info{Version: "v1.2.3", Revision: "0123abcd", GoVersion: "go1.26.8", Platform: "linux/arm64",
		Flavour: "static", Recipe: "99db79ce6448", Libraries: libs}
}

// `thumbd version` names every library of the recipe with its version and
// Debian revision, one line each.
func TestVersionListsTheRecipe(t *testing.T) {
	var out bytes.Buffer
	if err := printVersion(nil, staticBuild(t), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.HasPrefix(text, "thumbd v1.2.3 (commit 0123abcd, go1.26.8, linux/arm64, static build)\n") ||
		!strings.Contains(text, "libvips "+thumb.Version()+" and its codecs: scripts/build-libvips.sh, recipe 99db79ce6448") {
		t.Errorf("head of the output:\n%s", text)
	}
	for _, l := range staticBuild(t).Libraries {
		line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(l.Name) + ` +` + regexp.QuoteMeta(l.Version) + ` +` +
			regexp.QuoteMeta(l.Revision) + ` +` + regexp.QuoteMeta(l.Suite) + ` +` + regexp.QuoteMeta(l.Package) + ` `)
		if !line.MatchString(text) {
			t.Errorf("no line for %s %s-%s (%s):\n%s", l.Name, l.Version, l.Revision, l.Package, text)
		}
	}

	out.Reset()
	if err := printVersion([]string{"-json"}, staticBuild(t), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var v buildinfo.Report
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != "v1.2.3" || v.Libvips != thumb.Version() || len(v.Libraries) != len(staticBuild(t).Libraries) || v.Libraries[0].SHA256 == "" {
		t.Errorf("-json: %+v", v)
	}
}

// The dynamic build (a plain go build, this test binary) links Debian's
// libvips and says so rather than list a recipe it does not link.
func TestVersionOfTheDynamicBuild(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"thumbd", "version"}, envOf(nil), &out, &errs); err != nil {
		t.Fatal(err)
	}
	want := "thumbd dev (commit unknown, "
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "dynamic build)\nlibvips "+thumb.Version()+" and its codecs: the system's shared libraries") {
		t.Errorf("got %q, want it to start %q and name the system's libvips", out.String(), want)
	}
	if err := run(context.Background(), []string{"thumbd", "version", "extra"}, envOf(nil), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), `unexpected arguments ["extra"]`) {
		t.Errorf("an extra argument: %v", err)
	}
	if err := run(context.Background(), []string{"thumbd", "version", "-jsn"}, envOf(nil), io.Discard, io.Discard); err == nil {
		t.Errorf("an unknown flag: no error")
	}
}

// thumbd_build_info carries the release and the commit, and
// thumbd_library_info has one series per recipe library, linted clean.
func TestBuildAndLibraryInfoMetrics(t *testing.T) {
	cfg := testConfig(t)
	cfg.build = staticBuild(t)
	_, d := newTestServer(t, cfg)
	n, err := testutil.GatherAndCount(d.registry, "thumbd_library_info")
	if err != nil || n != len(cfg.build.Libraries) {
		t.Fatalf("thumbd_library_info: %d series (%v), want %d", n, err, len(cfg.build.Libraries))
	}
	families, err := d.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		switch f.GetName() {
		case "thumbd_library_info":
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				seen[labels["library"]+" "+labels["version"]+" "+labels["revision"]] = true
			}
		case "thumbd_build_info":
			labels := map[string]string{}
			for _, lp := range f.GetMetric()[0].GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["version"] != "v1.2.3" || labels["revision"] != "0123abcd" || labels["flavour"] != "static" || labels["libvips"] != thumb.Version() {
				t.Errorf("thumbd_build_info labels %v", labels)
			}
		}
	}
	for _, l := range cfg.build.Libraries {
		if !seen[l.Package+" "+l.Version+" "+l.Revision] {
			t.Errorf("no thumbd_library_info{library=%q,version=%q,revision=%q}", l.Package, l.Version, l.Revision)
		}
	}
	lintClean(t, d.registry)
}
