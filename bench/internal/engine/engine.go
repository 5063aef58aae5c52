// Package engine is `bench engine`: the engine comparison. It times
// 256x256 cover thumbnails made in process, one libvips thread each, from
// every photo in every output format (each at the service's default q:
// JPEG and WebP 80, AVIF 58, at AVIF effort 4 on both sides), for each
// thumbd build and for the Node twin's sharp, and prints per format a table
// of the per-thumbnail median time, the output bytes, for a lossy format
// the SSIM of the thumbnail against the same engine's lossless one, and the
// ratio to sharp's time.
//
// The thumbd side is BenchmarkEngine of service/internal/thumb, a test
// binary built per flavour with `scripts/build.sh go` (dynamic:
// Debian's libvips; slim and static: the project's) and run with
// VIPS_CONCURRENCY=1, THUMBD_ENGINE_SOURCES, THUMBD_ENGINE_FORMATS and
// THUMBD_ENGINE_OUT; it reports sub-benchmarks
// BenchmarkEngine/<source>/<format> with the metrics median-ms and
// out-bytes, and writes the thumbnails and a lossless reference of each
// source to THUMBD_ENGINE_OUT. The sharp side is the twin's
// engine-bench.mjs (--out likewise), whose pipeline is the one the twin
// serves. Engines take turns, round by round, so that all see the same
// machine: the figure is the median over rounds of each round's median.
// Run it from the repository root; it holds the bench lock while it
// measures.
//
// SSIM is scored against each engine's own lossless thumbnail rather than
// one reference for all: the engines resize and crop by their own
// arithmetic, and a crop one pixel off would cost more SSIM than the
// encoder does, so only the encoder's loss is scored.
package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/decode"
	buildflavour "github.com/thumbd/thumbd/bench/internal/flavour"
	"github.com/thumbd/thumbd/bench/internal/formats"
	"github.com/thumbd/thumbd/bench/internal/quality"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/stats"
)

// goFlavours are the Go engines, in the table's order; sharp comes last.
func goFlavours() []string { return []string{"dynamic", "slim", "static"} }

const sharp = "sharp"

// qualities are the output formats the comparison knows, and each one's q:
// the service's default from its format table (bench/internal/formats),
// which the twin shares (0: PNG, lossless, like the reference SSIM is
// scored against).
func qualities() map[string]int {
	qs := map[string]int{}
	for _, f := range formats.Outputs() {
		qs[f.Name] = f.Quality
	}
	return qs
}

// key names one figure: an engine's thumbnail of a source in a format.
type key struct{ engine, source, format string }

// sample is one round's figure for a key.
type sample struct {
	ms    float64
	bytes int
}

// figure is what the table gives for a key: the median over rounds, the
// bytes, and the SSIM against the engine's lossless thumbnail (0: not
// scored, for PNG).
type figure struct {
	ms    float64
	bytes int
	ssim  float64
}

type config struct {
	rounds, samples int
	dir             string
	names, formats  []string
	engines         []string
	bins            map[string]string // flavour -> prebuilt test binary
	sharpCmd        []string
	lock            string
}

// split reads a comma-separated list; blanks are dropped.
func split(s string) []string {
	return slices.DeleteFunc(strings.Split(strings.ReplaceAll(s, " ", ""), ","), func(x string) bool { return x == "" })
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var names, formatList, engines, sharpCmd string
	var bins []string
	fs.IntVar(&c.rounds, "rounds", 5, "rounds; engines take turns within each")
	fs.IntVar(&c.samples, "samples", 20, "thumbnails per engine, source and format in a round")
	fs.StringVar(&c.dir, "sources", "bench/results/tmp/sources", "directory of the sources (missing ones are made)")
	fs.StringVar(&names, "names", strings.Join(sources.DefaultNames(), ","), "sources to use")
	fs.StringVar(&formatList, "formats", strings.Join(formats.Names(), ","), "output formats, each at its default quality (thumbd formats)")
	fs.StringVar(&engines, "engines", strings.Join(append(goFlavours(), sharp), ","), "engines to compare")
	fs.Func("bin", "FLAVOUR=PATH: a BenchmarkEngine test binary already built for FLAVOUR (repeatable)", func(v string) error { bins = append(bins, v); return nil })
	fs.StringVar(&sharpCmd, "sharp", "node bench/twins/node/engine-bench.mjs", "the sharp side's command")
	benchlock.Flag(fs, &c.lock)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	c.names, c.formats, c.engines, c.sharpCmd = split(names), split(formatList), split(engines), strings.Fields(sharpCmd)
	if c.rounds < 1 || c.samples < 1 || len(c.names) == 0 || len(c.formats) == 0 || len(c.engines) == 0 {
		return c, errors.New("-rounds and -samples must be positive; -names, -formats and -engines not empty")
	}
	for _, e := range c.engines {
		if e != sharp && !slices.Contains(goFlavours(), e) {
			return c, fmt.Errorf("unknown engine %q (known: %s, %s)", e, strings.Join(goFlavours(), ", "), sharp)
		}
	}
	for _, f := range c.formats {
		if _, ok := qualities()[f]; !ok {
			return c, fmt.Errorf("unknown format %q (known: %s)", f, strings.Join(formats.Names(), ", "))
		}
	}
	for _, n := range c.names {
		// BenchmarkEngine times stills of JPEG photos; an animation is the
		// load suite's (thumb-animated-webp).
		if r, err := sources.Lookup(n); err == nil && r.Frames > 0 {
			return c, fmt.Errorf("source %q is an animation: the engine comparison is of photos (%s)", n, strings.Join(sources.DefaultNames(), ", "))
		}
	}
	if slices.ContainsFunc(c.formats, decode.NeedsVips) {
		if _, err := exec.LookPath("vips"); err != nil {
			return c, fmt.Errorf("scoring AVIF (or other non-Go) thumbnails needs the vips command to decode them (scripts/deps.sh dev installs libvips-tools): %w", err)
		}
	}
	c.bins = map[string]string{}
	for _, b := range bins {
		flavour, path, ok := strings.Cut(b, "=")
		if !ok || !slices.Contains(goFlavours(), flavour) || path == "" {
			return c, fmt.Errorf("-bin %q: want FLAVOUR=PATH with FLAVOUR one of %s", b, strings.Join(goFlavours(), ", "))
		}
		c.bins[flavour] = path
	}
	return c, nil
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	// The benchmark reads every *.jpg of its directory: give it exactly the
	// sources asked for.
	paths, err := sources.Ensure(c.dir, c.names...)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "thumbd-engine-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	srcDir := filepath.Join(work, "sources")
	if err := os.Mkdir(srcDir, 0o755); err != nil {
		return err
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(srcDir, filepath.Base(p))); err != nil {
			return err
		}
	}
	for _, e := range c.engines {
		if e == sharp || c.bins[e] != "" {
			continue
		}
		c.bins[e] = filepath.Join(work, "thumb-"+e+".test")
		fmt.Fprintf(stderr, "building the engine benchmark for %s\n", e)
		if err := build(ctx, e, c.bins[e]); err != nil {
			return err
		}
	}
	release, err := benchlock.Hold(ctx, c.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	fmt.Fprintf(stdout, "libvips: %s; %d CPUs\n", versions(ctx, c), runtime.NumCPU())
	// Each engine writes its thumbnails to a directory of its own, every
	// round over the last: the encoders are deterministic.
	outs := map[string]string{}
	for _, e := range c.engines {
		outs[e] = filepath.Join(work, "out-"+e)
		if err := os.Mkdir(outs[e], 0o755); err != nil {
			return err
		}
	}
	rounds := map[key][]sample{}
	for r := 1; r <= c.rounds; r++ {
		fmt.Fprintf(stderr, "round %d/%d\n", r, c.rounds)
		for _, e := range c.engines {
			got, err := runEngine(ctx, c, e, srcDir, outs[e], paths)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", e, r, err)
			}
			for k, s := range got {
				rounds[k] = append(rounds[k], s)
			}
		}
	}
	figures, err := summarise(c, rounds, outs)
	if err != nil {
		return err
	}
	render(stdout, c, figures)
	return nil
}

// summarise turns the rounds into the table's figures: the median time
// over rounds, the bytes, and for the lossy formats the SSIM of the
// thumbnail in outs against the engine's lossless one there.
func summarise(c config, rounds map[key][]sample, outs map[string]string) (map[key]figure, error) {
	figures := map[key]figure{}
	for k, ss := range rounds {
		var ms []float64
		for _, s := range ss {
			ms = append(ms, s.ms)
		}
		figures[k] = figure{ms: stats.Summarize(ms).Median, bytes: ss[len(ss)-1].bytes}
	}
	for _, e := range c.engines {
		for _, n := range c.names {
			var ref image.Image
			for _, f := range c.formats {
				if qualities()[f] == 0 {
					continue
				}
				if ref == nil {
					var err error
					if ref, err = thumbnail(outs[e], n+".reference.png", "png"); err != nil {
						return nil, fmt.Errorf("%s: %w", e, err)
					}
				}
				img, err := thumbnail(outs[e], n+"."+f, f)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", e, err)
				}
				s, err := quality.SSIM(ref, img)
				if err != nil {
					return nil, fmt.Errorf("%s: %s %s: %w", e, n, f, err)
				}
				k := key{e, n, f}
				fig := figures[k]
				fig.ssim = s
				figures[k] = fig
			}
		}
	}
	return figures, nil
}

// thumbnail decodes the file an engine wrote.
func thumbnail(dir, file, format string) (image.Image, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("no thumbnail to score: %w", err)
	}
	img, err := decode.Still(format, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return img, nil
}

// build makes flavour's BenchmarkEngine test binary with scripts/build.sh's
// environment for it.
func build(ctx context.Context, flavour, out string) error {
	return buildflavour.TestBinary(ctx, flavour, "./service/internal/thumb", out)
}

// runEngine runs one round of engine, which writes its thumbnails to out.
func runEngine(ctx context.Context, c config, engine, srcDir, out string, paths []string) (map[key]sample, error) {
	var cmd *exec.Cmd
	if engine == sharp {
		args := append(slices.Clone(c.sharpCmd[1:]), "--iterations", strconv.Itoa(c.samples), "--formats", strings.Join(c.formats, ","), "--out", out)
		for _, p := range paths {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			args = append(args, abs)
		}
		cmd = exec.CommandContext(ctx, c.sharpCmd[0], args...)
	} else {
		bin, err := filepath.Abs(c.bins[engine])
		if err != nil {
			return nil, err
		}
		cmd = exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", "^BenchmarkEngine$",
			"-test.benchtime", strconv.Itoa(c.samples)+"x", "-test.count", "1")
		// The test binary finds its testdata relative to its package.
		cmd.Dir = filepath.Join("service", "internal", "thumb")
		cmd.Env = append(os.Environ(), "VIPS_CONCURRENCY=1", "THUMBD_ENGINE_SOURCES="+srcDir,
			"THUMBD_ENGINE_FORMATS="+strings.Join(c.formats, ","), "THUMBD_ENGINE_OUT="+out)
	}
	var stdout, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &errs
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w\n%s%s", err, stdout.String(), errs.String())
	}
	var got map[key]sample
	var err error
	if engine == sharp {
		got, err = parseSharp(&stdout)
	} else {
		got, err = parseGoBench(&stdout, engine)
	}
	if err != nil {
		return nil, err
	}
	for _, n := range c.names {
		for _, f := range c.formats {
			if _, ok := got[key{engine, n, f}]; !ok {
				return nil, fmt.Errorf("no figure for %s %s in its output:\n%s", n, f, stdout.String())
			}
		}
	}
	return got, nil
}

// versions names each engine's libvips: pkg-config's answer for the
// flavour's build environment, engine-bench.mjs's for sharp.
func versions(ctx context.Context, c config) string {
	var parts []string
	for _, e := range c.engines {
		var cmd *exec.Cmd
		switch e {
		case sharp:
			cmd = exec.CommandContext(ctx, c.sharpCmd[0], append(slices.Clone(c.sharpCmd[1:]), "--versions")...)
		default:
			cmd = exec.CommandContext(ctx, "scripts/build.sh", "vips-version", e)
		}
		out, err := cmd.Output()
		v := strings.TrimSpace(string(out))
		if e == sharp && err == nil {
			var row struct{ Sharp, Libvips string }
			err = json.Unmarshal(out, &row)
			v = row.Libvips + " (sharp " + row.Sharp + ")"
		}
		if err != nil || v == "" {
			v = "unknown"
		}
		parts = append(parts, e+" "+v)
	}
	return strings.Join(parts, ", ")
}

// parseGoBench reads `go test -bench` lines of BenchmarkEngine/<source>/<format>
// with their median-ms and out-bytes metrics. (Lines of the older
// BenchmarkEngine/<source>.jpg, PNG only, are read too, their mean ns/op
// standing in for the median.)
func parseGoBench(r io.Reader, engine string) (map[key]sample, error) {
	got := map[key]sample{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkEngine/") {
			continue
		}
		name := f[0][len("BenchmarkEngine/"):]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i] // the -GOMAXPROCS suffix
			}
		}
		source, format, ok := strings.Cut(name, "/")
		if !ok {
			source, format = strings.TrimSuffix(name, ".jpg"), "png"
		}
		metrics := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", sc.Text(), err)
			}
			metrics[f[i+1]] = v
		}
		ms, ok := metrics["median-ms"]
		if !ok {
			ms = metrics["ns/op"] / 1e6
		}
		if ms <= 0 {
			return nil, fmt.Errorf("benchmark line %q: no time", sc.Text())
		}
		got[key{engine, source, format}] = sample{ms: ms, bytes: int(metrics["out-bytes"])}
	}
	return got, sc.Err()
}

// parseSharp reads engine-bench.mjs's JSON lines: the versions first, then
// one per file and format.
func parseSharp(r io.Reader) (map[key]sample, error) {
	got := map[key]sample{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var row struct {
			File     string  `json:"file"`
			Format   string  `json:"format"`
			MedianMs float64 `json:"median_ms"`
			Bytes    int     `json:"bytes"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return nil, fmt.Errorf("engine-bench.mjs line %q: %w", sc.Text(), err)
		}
		if row.File == "" {
			continue // the versions line
		}
		source := strings.TrimSuffix(filepath.Base(row.File), ".jpg")
		got[key{sharp, source, row.Format}] = sample{ms: row.MedianMs, bytes: row.Bytes}
	}
	return got, sc.Err()
}

// render prints one table per format: per engine and source the median
// over rounds of the per-round medians, the bytes, the SSIM (lossy formats)
// and the time's ratio to sharp's.
func render(w io.Writer, c config, figures map[key]figure) {
	for _, f := range c.formats {
		q, lossy := "", qualities()[f] > 0
		if lossy {
			q = fmt.Sprintf(" q%d", qualities()[f])
		}
		fmt.Fprintf(w, "\n%s%s: 256x256 cover, one libvips thread; per-thumbnail medians over %d rounds x %d samples", f, q, c.rounds, c.samples)
		if lossy {
			fmt.Fprint(w, "; SSIM (luma) against the engine's own lossless thumbnail")
		}
		fmt.Fprintf(w, "\n%-8s", "engine")
		for _, n := range c.names {
			fmt.Fprintf(w, " %*s %*s", max(9, len(n)+3), n+" ms", max(8, len(n)+2), n+" B")
			if lossy {
				fmt.Fprintf(w, " %*s", max(6, len(n)+5), n+" SSIM")
			}
			fmt.Fprintf(w, " %8s", "vs sharp")
		}
		fmt.Fprintln(w)
		for _, e := range c.engines {
			fmt.Fprintf(w, "%-8s", e)
			for _, n := range c.names {
				fig, ok := figures[key{e, n, f}]
				ref, hasRef := figures[key{sharp, n, f}]
				vs := "-"
				if x := stats.Ratio(fig.ms, ref.ms); ok && hasRef && x > 0 {
					vs = fmt.Sprintf("%.2fx", x)
				}
				fmt.Fprintf(w, " %*.2f %*d", max(9, len(n)+3), fig.ms, max(8, len(n)+2), fig.bytes)
				if lossy {
					fmt.Fprintf(w, " %*.4f", max(6, len(n)+5), fig.ssim)
				}
				fmt.Fprintf(w, " %8s", vs)
			}
			fmt.Fprintln(w)
		}
	}
}
