package report

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/thumbd/thumbd/bench/internal/cellarms"
	"github.com/thumbd/thumbd/bench/internal/contract"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/machine"
	"github.com/thumbd/thumbd/bench/internal/results"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/procfs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture is a small but complete run: two measured targets, a skipped
// one, a contract mismatch, errors under load and a container image.
func fixture() *results.Results {
	start := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	st := func(name string, h, th []float64) results.Startup {
		return results.Startup{Target: name, HealthMs: h, ThumbnailMs: th, Health: stats.Summarize(h), Thumbnail: stats.Summarize(th), PollGapUs: 180}
	}
	ok := func(route, name string) contract.Check {
		return contract.Check{Route: route, Name: name, OK: true, Digest: "46d54cfbe1e5ddbc"}
	}
	return &results.Results{
		Schema:   results.Schema,
		Started:  start,
		Finished: start.Add(14 * time.Minute),
		Command:  "scripts/bench.sh",
		Baseline: "node",
		Machine: machine.Info{CPU: "AMD EPYC", Cores: 2, MemoryBytes: 25_276_502_016, Kernel: "Linux 6.18.44 x86_64", OS: "Debian GNU/Linux 12 (bookworm)",
			Go: "go1.26.8", Node: "v20.20.2", Libvips: "8.14.1", Sharp: "0.35.5", SharpLibvips: "8.18.7", Docker: "20.10.24"},
		Options: results.Options{StartupRuns: 3, PollInterval: 0.1, SettleSeconds: 3, StepSeconds: 10, WarmupSeconds: 2,
			Concurrency: []int{10, 500}, Rounds: 3, Pinned: true, ServerCPUs: "1", ClientCPUs: "0", DockerNetwork: "host"},
		Targets: []results.Target{
			{Spec: target.Spec{Name: "thumbd-static", Kind: target.Process, Command: []string{"bin/thumbd-static"}}, Allowed: "1", Libvips: "8.16.1"},
			{Spec: target.Spec{Name: "thumbd-static-cells", Kind: target.Process, Command: []string{"bin/thumbd-static"}, Env: []string{"THUMBD_ENGINE=cells"}}, Allowed: "1", Libvips: "8.16.1"},
			{Spec: target.Spec{Name: "thumbd:scratch", Kind: target.Container, Image: "thumbd:scratch"}, Skipped: "image thumbd:scratch is not built (scripts/images.sh)"},
			{Spec: target.Spec{Name: "node", Kind: target.Process, Command: []string{"node", "bench/twins/node/server.mjs"}}, Allowed: "1"},
		},
		Routes: []results.Route{
			{ID: "health", Method: "GET", Path: "/health", Label: "/health"},
			{ID: "hash", Method: "GET", Path: "/hash", Label: "/hash (1 KiB default payload)"},
			{ID: "thumb-small", Method: "POST", Path: "/thumbnail?w=256&h=256&fit=cover&format=png", Source: "small", Format: "png",
				Label: "POST /thumbnail, small: 10.8 KB JPEG 400x300 to 256x256 cover PNG"},
			{ID: "thumb-photo12-webp", Method: "POST", Path: "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80", Source: "photo12", Format: "webp",
				Label: "POST /thumbnail, photo12: 3724.9 KB JPEG 4032x3024 to 256x256 cover WEBP q80"},
			{ID: "thumb-small-avif", Method: "POST", Path: "/thumbnail?w=256&h=256&fit=cover&format=avif&q=58", Source: "small", Format: "avif",
				Label: "POST /thumbnail, small: 10.8 KB JPEG 400x300 to 256x256 cover AVIF q58"},
			{ID: "thumb-animated-webp", Method: "POST", Path: "/thumbnail?w=256&h=256&fit=cover&format=webp&q=80&animated=true", Source: "animated", Format: "webp", Animated: true,
				Label: "POST /thumbnail, animated: 1478.5 KB GIF 320x240, 50 frames to 256x256 cover animated WEBP q80"},
		},
		Contract: []results.Contract{
			{Target: "thumbd-static", Checks: []contract.Check{ok("health", "GET /health"), ok("json", "GET /json"), ok("hash", "GET /hash"),
				{Route: "thumb-small", Name: "POST /thumbnail", OK: true, Bytes: 152056},
				{Route: "thumb-photo12-webp", Name: "POST /thumbnail?format=webp", OK: true, Bytes: 9120},
				{Route: "thumb-small-avif", Name: "POST /thumbnail?format=avif", OK: true, Bytes: 1402},
				{Route: "thumb-animated-webp", Name: "POST /thumbnail?format=webp&animated=true", OK: true, Bytes: 725430}}},
			{Target: "node", Checks: []contract.Check{ok("health", "GET /health"), ok("json", "GET /json"),
				{Route: "hash", Name: "GET /hash?data=x", Detail: `body differs: got "{}", want "{\"algorithm\"}"`},
				{Route: "thumb-small", Name: "POST /thumbnail", OK: true, Bytes: 190000},
				{Route: "thumb-photo12-webp", Name: "POST /thumbnail?format=webp", Detail: "webp is 256x255, want 256x256"},
				{Route: "thumb-small-avif", Name: "POST /thumbnail?format=avif", OK: true, Bytes: 2019},
				{Route: "thumb-animated-webp", Name: "POST /thumbnail?format=webp&animated=true", Detail: "frame 3 shows 100 ms, want the source's 40 ms"}}},
		},
		Startup: []results.Startup{
			st("thumbd-static", []float64{4.8, 5.1, 5.0}, []float64{18, 19, 18.5}),
			st("thumbd-static-cells", []float64{4.6, 4.9, 5.2}, []float64{24, 26, 25}),
			st("node", []float64{230, 240, 250}, []float64{300, 310, 320}),
		},
		Idle: []results.Idle{
			{Target: "thumbd-static", Status: procfs.Status{VmRSS: 13_900_000, VmSize: 1_200_000_000, RssAnon: 6_000_000, RssFile: 7_900_000, Threads: 6}, TreePss: 13_800_000},
			{Target: "thumbd-static-cells", Status: procfs.Status{VmRSS: 9_000_000, VmSize: 1_100_000_000, RssAnon: 2_200_000, RssFile: 6_800_000, Threads: 7}, CellsRSS: 51_000_000, TreePss: 24_000_000},
			{Target: "node", Status: procfs.Status{VmRSS: 72_000_000, VmSize: 1_076_000_000, RssAnon: 22_000_000, RssFile: 50_000_000, Threads: 11}},
		},
		Load: []results.LoadStep{
			{Route: "health", Target: "thumbd-static", Concurrency: 10, Outcome: load.Outcome{RPS: 28000, P50: 0.22, P50Lo: 0.21, P50Hi: 0.23, P90: 0.5, P99: 3.9, ClientCPU: 0.7, ServerCPU: 0.7, ServerPeakRSS: 20_000_000, CPUPerOK: 25}},
			{Route: "health", Target: "node", Concurrency: 10, Outcome: load.Outcome{RPS: 14000, P50: 0.26, P50Lo: 0.25, P50Hi: 0.27, P90: 1.6, P99: 6.5, ClientCPU: 0.5, ServerCPU: 0.45, ServerPeakRSS: 84_000_000, CPUPerOK: 32}},
			{Route: "health", Target: "thumbd-static", Concurrency: 500, Outcome: load.Outcome{RPS: 30000, P50: 12, P90: 20, P99: 45, ErrorCount: 3,
				Non2xx: map[string]int{"503": 2}, Errors: map[string]int{"Get \"http://127.0.0.1:1/health\": read: connection reset by peer": 1}, ClientCPU: 0.95, ServerCPU: 0.9, ServerPeakRSS: 40_000_000}},
			{Route: "health", Target: "node", Concurrency: 500, Outcome: load.Outcome{HostIdle: 0.12, HostSteal: 0.031, HostIRQ: 0.05, RPS: 9000, P50: 50, P90: 60, P99: 120, ClientCPU: 0.6, ServerCPU: 1, ServerPeakRSS: 120_000_000}},
			{Route: "hash", Target: "thumbd-static", Concurrency: 10, Outcome: load.Outcome{RPS: 14000, P50: 0.25, P90: 0.5, P99: 7}, RoundsRPS: []float64{14000, 12000, 15000}, FailedRounds: 1},
			{Route: "hash", Target: "node", Concurrency: 10, Skipped: "failed the contract check for this route: not timed"},
			{Route: "thumb-small", Target: "thumbd-static", Concurrency: 10, Outcome: load.Outcome{RPS: 150, P50: 60, P50Lo: 58, P50Hi: 63, P90: 70, P99: 90, ClientCPU: 0.1, ServerCPU: 1, ServerPeakRSS: 60_000_000, CPUPerOK: 6600, BytesPerOK: 152056}},
			{Route: "thumb-small", Target: "thumbd-static-cells", Concurrency: 10, Outcome: load.Outcome{RPS: 146, P50: 61.5, P90: 71, P99: 92, ClientCPU: 0.1, ServerCPU: 1, ServerPeakRSS: 30_000_000, CPUPerOK: 6700, BytesPerOK: 152056}},
			{Route: "thumb-small", Target: "node", Concurrency: 10, Outcome: load.Outcome{RPS: 160, P50: 55, P50Lo: 54, P50Hi: 57, P90: 65, P99: 80, ClientCPU: 0.1, ServerCPU: 1, ServerPeakRSS: 150_000_000, CPUPerOK: 6200, BytesPerOK: 190000}},
		},
		Images: []results.Image{{Target: "thumbd:scratch", Image: "thumbd:scratch", Bytes: 17_400_000, GzipBytes: 7_100_000}},
		Cells: &cellarms.Table{Flavour: "static", Image: "thumbd:scratch", Samples: 30, Fresh: 15, Rounds: 3, Rows: []cellarms.Row{
			{Arm: cellarms.InProcess, Source: "small", Ms: 8.1, FirstMs: 21.5, FirstFaults: 1900, WarmFaults: 40, OutBytes: 152056},
			{Arm: cellarms.Reused, Source: "small", Ms: 8.4, OverheadMs: 0.3, Ratio: 1.04, FirstMs: 24.0, FirstFaults: 2100, WarmFaults: 35, StartRSS: 17_000_000, RSS: 23_000_000, OutBytes: 152056},
			{Arm: cellarms.Fresh, Source: "small", Ms: 20.2, OverheadMs: 12.1, Ratio: 2.49, FirstMs: 20.2, FirstFaults: 2050, WarmFaults: 2050, StartRSS: 17_000_000, RSS: 21_000_000, OutBytes: 152056},
			{Arm: cellarms.Container, Source: "small", Ms: 8.5, OverheadMs: 0.4, Ratio: 1.05, FirstMs: 25.0, FirstFaults: 2150, WarmFaults: 36, StartRSS: 17_500_000, RSS: 23_500_000, OutBytes: 152056},
		}},
		Notes: []string{"An example note."},
	}
}

func TestRenderGolden(t *testing.T) {
	got := Render(fixture(), []Figure{{Title: "Startup", File: "startup-health.svg"}})
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./bench/internal/report -update to create it)", err)
	}
	if got != string(want) {
		out := filepath.Join(t.TempDir(), "report.md")
		os.WriteFile(out, []byte(got), 0o644)
		t.Fatalf("report differs from %s; got written to %s (diff them; -update accepts it)", golden, out)
	}
}

func TestRenderEmpty(t *testing.T) {
	r := &results.Results{Schema: results.Schema, Baseline: "node"}
	if got := Render(r, nil); len(got) == 0 {
		t.Fatal("empty report")
	}
}
