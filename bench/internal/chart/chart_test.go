package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/results"
	"github.com/thumbd/thumbd/internal/procfs"
)

func TestWriteAll(t *testing.T) {
	r := &results.Results{
		Options: results.Options{Concurrency: []int{10, 100}},
		Routes:  []results.Route{{ID: "health", Label: "/health"}},
		Startup: []results.Startup{{Target: "a", HealthMs: []float64{5, 6}}, {Target: "b", HealthMs: []float64{200}}},
		Idle:    []results.Idle{{Target: "a", Status: procfs.Status{VmRSS: 1e7}}},
		Load: []results.LoadStep{
			{Route: "health", Target: "a", Concurrency: 10, Outcome: load.Outcome{RPS: 100, ServerPeakRSS: 2e7}},
			{Route: "health", Target: "a", Concurrency: 100, Outcome: load.Outcome{RPS: 120}},
			{Route: "health", Target: "b", Concurrency: 10, Skipped: "no"},
		},
	}
	dir := t.TempDir()
	figs, err := WriteAll(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.File)
		b, err := os.ReadFile(filepath.Join(dir, f.File))
		if err != nil || !strings.Contains(string(b), "<svg") {
			t.Fatalf("%s: not an SVG (%v)", f.File, err)
		}
	}
	// No thumbnail startups: that chart is left out.
	if got := strings.Join(names, ","); got != "startup-health.svg,memory.svg,rps-health.svg" {
		t.Fatalf("charts %s", got)
	}
}
