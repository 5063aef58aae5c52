// Package cellarms is `bench cells`, and the bench suite's cell section:
// the arms of the cell overhead study (../shared/reference/cell-overhead.txt)
// for thumbd's cells: a 256x256 cover PNG made in process, in a native
// cell reused for every job, in a native cell fresh for every job (started
// ahead, so only its first-call cost is timed), the same pre-warmed with an
// untimed synthetic 64x64 thumbnail (the study's pre-warming), and in a
// containerised cell (hardened `docker run`, socket on a shared volume),
// side by side in one run. Per arm and source: the median per-thumbnail time and its
// overhead over in process, minor page faults per job (the first and the
// warm ones) and the cell's RSS.
//
// The measuring side is TestArms of service/internal/cellpool, a test
// binary built per flavour with `scripts/build.sh go` (the same
// libvips as the thumbd binary its cells run) and run pinned to the server
// CPUs; rounds repeat it and the figure is the median of the rounds'
// medians.
package cellarms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	buildflavour "github.com/thumbd/thumbd/bench/internal/flavour"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/stats"
)

// Arm names, as TestArms reports them, in the table's order.
const (
	InProcess = "in process"
	Reused    = "native cell, reused"
	Fresh     = "native cell, fresh per job"
	Warmed    = "native cell, fresh, pre-warmed"
	Container = "containerised cell, reused"
)

// Arms lists them in order.
func Arms() []string { return []string{InProcess, Reused, Fresh, Warmed, Container} }

// Options say what to measure.
type Options struct {
	Flavour  string   // scripts/build.sh flavour of the test binary: static, slim, dynamic
	Bin      string   // the thumbd its native cells run (same flavour)
	Image    string   // the image of the containerised cell; "" leaves that arm out
	Sources  []string // source files
	Samples  int      // warm jobs per arm and source in a round
	Fresh    int      // fresh-cell jobs per source in a round
	Rounds   int
	CPUs     []int  // where everything runs; nil: anywhere
	TestBin  string // a TestArms binary already built; "" builds one
	Progress io.Writer
}

// Row is one arm on one source, summarised over the rounds.
type Row struct {
	Arm    string `json:"arm"`
	Source string `json:"source"`
	// Ms is the median per-thumbnail time (warm jobs; for the fresh arm,
	// every job is a first one); OverheadMs and Ratio compare it with in
	// process on the same source.
	Ms         float64 `json:"ms"`
	OverheadMs float64 `json:"overhead_ms"`
	Ratio      float64 `json:"ratio"`
	FirstMs    float64 `json:"first_ms"`
	// Minor page faults per job: the first job's and the warm ones' median.
	FirstFaults float64 `json:"first_faults"`
	WarmFaults  float64 `json:"warm_faults"`
	RSS         int64   `json:"rss"`
	StartRSS    int64   `json:"start_rss"`
	OutBytes    int     `json:"out_bytes"`
	// StartMs is the median cell start, exec to hello (0 in process).
	StartMs float64 `json:"start_ms,omitempty"`
	// RoundsMs is each round's median, in the order run.
	RoundsMs []float64 `json:"rounds_ms"`
}

// Table is one run.
type Table struct {
	Flavour string `json:"flavour"`
	Image   string `json:"image,omitempty"`
	Samples int    `json:"samples"`
	Fresh   int    `json:"fresh"`
	Rounds  int    `json:"rounds"`
	Rows    []Row  `json:"rows"`
	Error   string `json:"error,omitempty"`
}

// raw is one round's figures for an arm on a source, as TestArms writes.
type raw struct {
	Arm         string    `json:"arm"`
	Source      string    `json:"source"`
	FirstMs     float64   `json:"first_ms"`
	Ms          []float64 `json:"ms"`
	FirstFaults int64     `json:"first_faults"`
	Faults      []int64   `json:"faults"`
	RSS         int64     `json:"rss"`
	StartRSS    int64     `json:"start_rss"`
	OutBytes    int       `json:"out_bytes"`
	StartMs     []float64 `json:"start_ms"`
}

// Build makes the TestArms binary of a flavour, from the repository root.
func Build(ctx context.Context, flavour, out string) error {
	return buildflavour.TestBinary(ctx, flavour, "./service/internal/cellpool", out)
}

// Measure runs the arms. The caller holds the bench lock.
func Measure(ctx context.Context, o Options) (Table, error) {
	t := Table{Flavour: o.Flavour, Image: o.Image, Samples: o.Samples, Fresh: o.Fresh, Rounds: o.Rounds}
	work, err := os.MkdirTemp("", "thumbd-cellarms-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(work)
	if o.TestBin == "" {
		o.TestBin = filepath.Join(work, "cellpool-"+o.Flavour+".test")
		if err := Build(ctx, o.Flavour, o.TestBin); err != nil {
			return t, err
		}
	}
	bin, err := filepath.Abs(o.Bin)
	if err != nil {
		return t, err
	}
	if _, err := os.Stat(bin); err != nil {
		return t, fmt.Errorf("the thumbd binary of the native cells: %w", err)
	}
	var abs []string
	for _, s := range o.Sources {
		a, err := filepath.Abs(s)
		if err != nil {
			return t, err
		}
		abs = append(abs, a)
	}
	rounds := map[[2]string][]raw{}
	for r := 1; r <= o.Rounds; r++ {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "cell arms: round %d/%d\n", r, o.Rounds)
		}
		out := filepath.Join(work, fmt.Sprintf("round-%d.json", r))
		cmd := exec.CommandContext(ctx, o.TestBin, "-test.run", "^TestArms$", "-test.count", "1")
		// MALLOC_ARENA_MAX=2 as in the images, for the in-process arm (the
		// cells get it from TestArms, the container from its image).
		cmd.Env = append(os.Environ(), "MALLOC_ARENA_MAX=2", "THUMBD_ARMS=1", "THUMBD_ARMS_BIN="+bin, "THUMBD_ARMS_OUT="+out,
			"THUMBD_ARMS_SOURCES="+strings.Join(abs, ","), "THUMBD_ARMS_IMAGE="+o.Image,
			"THUMBD_ARMS_SAMPLES="+strconv.Itoa(o.Samples), "THUMBD_ARMS_FRESH="+strconv.Itoa(o.Fresh),
			"THUMBD_ARMS_CPUSET="+affinity.Format(o.CPUs))
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := affinity.Start(cmd, o.CPUs); err != nil {
			return t, err
		}
		if err := cmd.Wait(); err != nil {
			return t, fmt.Errorf("cell arms, round %d: %w\n%s", r, err, log.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return t, err
		}
		var rs []raw
		if err := json.Unmarshal(b, &rs); err != nil {
			return t, fmt.Errorf("cell arms, round %d: %w", r, err)
		}
		for _, x := range rs {
			k := [2]string{x.Arm, x.Source}
			rounds[k] = append(rounds[k], x)
		}
	}
	t.Rows = summarise(rounds, names(o.Sources))
	return t, nil
}

func names(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)))
	}
	return out
}

// summarise turns rounds into rows: medians of the rounds' medians, the
// overhead against in process on the same source.
func summarise(rounds map[[2]string][]raw, sourceNames []string) []Row {
	var rows []Row
	base := map[string]float64{}
	for _, src := range sourceNames {
		for _, arm := range Arms() {
			rs := rounds[[2]string{arm, src}]
			if len(rs) == 0 {
				continue
			}
			var ms, first, ff, wf, rss, start, starts []float64
			row := Row{Arm: arm, Source: src}
			for _, x := range rs {
				m := stats.Summarize(x.Ms).Median
				row.RoundsMs = append(row.RoundsMs, m)
				ms = append(ms, m)
				first = append(first, x.FirstMs)
				ff = append(ff, float64(x.FirstFaults))
				wf = append(wf, medianInts(x.Faults))
				rss = append(rss, float64(x.RSS))
				start = append(start, float64(x.StartRSS))
				starts = append(starts, x.StartMs...)
				row.OutBytes = x.OutBytes
			}
			row.Ms, row.FirstMs = stats.Summarize(ms).Median, stats.Summarize(first).Median
			row.FirstFaults, row.WarmFaults = stats.Summarize(ff).Median, stats.Summarize(wf).Median
			row.RSS, row.StartRSS = int64(stats.Summarize(rss).Median), int64(stats.Summarize(start).Median)
			row.StartMs = stats.Summarize(starts).Median
			if arm == InProcess {
				base[src] = row.Ms
			}
			if b := base[src]; b > 0 {
				row.OverheadMs, row.Ratio = row.Ms-b, stats.Ratio(row.Ms, b)
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func medianInts(xs []int64) float64 {
	var f []float64
	for _, x := range xs {
		f = append(f, float64(x))
	}
	return stats.Summarize(f).Median
}

// Markdown is the table laid out as the study's: one row per arm and
// source, the time and its overhead, the faults, the cell's memory.
func Markdown(w io.Writer, t Table) {
	if t.Error != "" {
		// The ✗ is what scripts and readers look for: an arm that failed is
		// a failed run, not a missing figure.
		fmt.Fprintf(w, "✗ Not measured: %s\n", t.Error)
		return
	}
	fmt.Fprintf(w, "256x256 cover PNG, one libvips thread, %s build", t.Flavour)
	if t.Image != "" {
		fmt.Fprintf(w, " (container arm: `%s`)", t.Image)
	}
	fmt.Fprintf(w, "; per thumbnail, medians of %d rounds of %d warm jobs (fresh arms: %d jobs, each the cell's first), timed from the supervisor's side.\n\n", t.Rounds, t.Samples, t.Fresh)
	fmt.Fprintln(w, "| source | arm | median ms | overhead vs in process | first job ms | minor faults, first job | minor faults, warm job | cell RSS (at hello → after) | cell start ms |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---|---:|")
	for _, r := range t.Rows {
		over, rss, start := "—", "—", "—"
		if r.StartMs > 0 {
			start = fmt.Sprintf("%.1f", r.StartMs)
		}
		if r.Arm != InProcess && r.Ratio > 0 {
			over = fmt.Sprintf("%+.2f ms (%.2fx)", r.OverheadMs, r.Ratio)
		}
		if r.RSS > 0 {
			rss = fmt.Sprintf("%.1f → %.1f MB", float64(r.StartRSS)/1e6, float64(r.RSS)/1e6)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %s | %.2f | %.0f | %.0f | %s | %s |\n", r.Source, r.Arm, r.Ms, over, r.FirstMs, r.FirstFaults, r.WarmFaults, rss, start)
	}
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cells", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	var names, cpus, out, lock, dir string
	fs.StringVar(&o.Flavour, "flavour", "static", "build of the test binary and of the cells: static, slim or dynamic")
	fs.StringVar(&o.Bin, "bin", "", "thumbd binary the native cells run (default bin/thumbd-FLAVOUR, bin/thumbd for dynamic)")
	fs.StringVar(&o.Image, "image", "thumbd:scratch", "image of the containerised cell (\"\" leaves the arm out)")
	fs.StringVar(&dir, "sources", "bench/results/tmp/sources", "directory of the sources (missing ones are made)")
	fs.StringVar(&names, "names", strings.Join(sources.DefaultNames(), ","), "sources to use")
	fs.IntVar(&o.Samples, "samples", 30, "warm jobs per arm and source in a round")
	fs.IntVar(&o.Fresh, "fresh", 15, "jobs on fresh cells per source in a round")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds")
	fs.StringVar(&cpus, "cpus", "1", "CPUs the arms run on (\"\": any)")
	fs.StringVar(&out, "out", "", "also write cells.json and cells.md into this directory")
	benchlock.Flag(fs, &lock)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Samples < 1 || o.Fresh < 1 || o.Rounds < 1 {
		return errors.New("-samples, -fresh and -rounds must be positive")
	}
	if o.Bin == "" {
		o.Bin = "bin/thumbd-" + o.Flavour
		if o.Flavour == "dynamic" {
			o.Bin = "bin/thumbd"
		}
	}
	var err error
	if cpus != "" {
		if o.CPUs, err = affinity.ParseList(cpus); err != nil {
			return err
		}
	}
	if o.Sources, err = sources.Ensure(dir, slices.DeleteFunc(strings.Split(names, ","), func(s string) bool { return s == "" })...); err != nil {
		return err
	}
	o.Progress = stderr
	o.TestBin = filepath.Join(os.TempDir(), fmt.Sprintf("thumbd-cellarms-%d.test", os.Getpid()))
	defer os.Remove(o.TestBin)
	fmt.Fprintf(stderr, "building the cell arms for %s\n", o.Flavour)
	if err := Build(ctx, o.Flavour, o.TestBin); err != nil {
		return err
	}
	release, err := benchlock.Hold(ctx, lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	t, err := Measure(ctx, o)
	if err != nil {
		return err
	}
	Markdown(stdout, t)
	if out != "" {
		var md bytes.Buffer
		Markdown(&md, t)
		b, _ := json.MarshalIndent(t, "", "  ")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "cells.json"), b, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(out, "cells.md"), md.Bytes(), 0o644)
	}
	return nil
}
