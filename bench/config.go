package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/target"
)

// config is everything the flags say, typed.
type config struct {
	root          string
	out           string
	render        string
	quick         bool
	runs          int
	poll          time.Duration
	settle        time.Duration
	duration      time.Duration
	warmup        time.Duration
	rounds        int
	concurrency   []int
	routes        []string
	pin           bool
	serverCPUs    []int
	clientCPUs    []int
	baseline      string
	targets       []target.Spec
	sources       string
	fixture       string
	dockerNetwork string
	lock          string
	imageSizes    bool
	startTimeout  time.Duration
	notes         []string
	cells         bool
	cellsImage    string
}

type targetFlags []target.Spec

func (t *targetFlags) String() string { return fmt.Sprint(len(*t)) }
func (t *targetFlags) Set(s string) error {
	spec, err := target.Parse(s)
	if err != nil {
		return err
	}
	*t = append(*t, spec)
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad list %q", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var targets targetFlags
	var notes []string
	var conc, routes, serverCPUs, clientCPUs string
	fs.StringVar(&c.root, "root", "", "repository root (default: found from the working directory)")
	fs.StringVar(&c.out, "out", "", "output directory (default bench/results/DATE, or bench/results/tmp/quick with -quick)")
	fs.StringVar(&c.render, "render", "", "only redraw report.md and the charts from this results.json")
	fs.BoolVar(&c.quick, "quick", false, "smoke test: 1 startup run, 1 s steps, 10 clients, short settle")
	fs.IntVar(&c.runs, "runs", 10, "startup runs per target (fresh process each)")
	fs.DurationVar(&c.poll, "poll", 50*time.Microsecond, "pause between startup poll attempts")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "wait after the first /health before reading idle memory")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per load step")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured warm-up before each load step, at the step's concurrency")
	fs.IntVar(&c.rounds, "rounds", 1, "passes over the targets per step (A B A B ...); the report gives the median pass and the range")
	fs.StringVar(&conc, "concurrency", "10,100,500", "concurrent clients per step")
	fs.StringVar(&routes, "routes", strings.Join(allRoutes(), ","), "routes to load (thumb-SOURCE[-FORMAT]: small, large, photo12 to png, jpeg, webp, avif; thumb-animated-webp; info-photo12[-header], info-photo12-exif; -quick: "+strings.Join(quickRoutes(), ",")+")")
	fs.BoolVar(&c.pin, "pin", true, "pin servers and the load generator to separate CPUs")
	fs.StringVar(&serverCPUs, "server-cpus", "1", "CPUs for the server under test when pinned")
	fs.StringVar(&clientCPUs, "client-cpus", "0", "CPUs for this driver (the load generator) when pinned")
	fs.StringVar(&c.baseline, "baseline", "node", "target the report's ratios are against")
	fs.Var(&targets, "target", "NAME=process:CMD ARGS | NAME=container:IMAGE | NAME=url:BASEURL (repeatable; replaces the default suite)")
	fs.StringVar(&c.sources, "sources", "", "directory with the sources (default bench/results/tmp/sources; missing ones are made, as by `bench sources`)")
	fs.StringVar(&c.fixture, "fixture", "service/testdata/json-document.json", "expected /json body, relative to the root")
	fs.StringVar(&c.dockerNetwork, "docker-network", "host", "container networking: host or bridge")
	fs.StringVar(&c.lock, "lock", benchlock.Path, "flock held while timing (\"\" for none); do not also wrap the driver in flock(1)")
	fs.BoolVar(&c.imageSizes, "image-sizes", true, "measure container image sizes (docker save | gzip)")
	fs.DurationVar(&c.startTimeout, "start-timeout", 60*time.Second, "longest wait for a target's first /health")
	fs.BoolVar(&c.cells, "cells", true, "end with the cell overhead study's arms (bench cells) on bin/thumbd-static")
	fs.StringVar(&c.cellsImage, "cells-image", "thumbd:scratch", "image of the arms' containerised cell (\"\": no container arm)")
	fs.Func("note", "a note for the report's top (repeatable; with -render, added to the results)", appendTo(&notes))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.quick {
		if !set["runs"] {
			c.runs = 1
		}
		if !set["duration"] {
			c.duration = time.Second
		}
		if !set["warmup"] {
			c.warmup = 300 * time.Millisecond
		}
		if !set["concurrency"] {
			conc = "10"
		}
		if !set["settle"] {
			c.settle = 500 * time.Millisecond
		}
		if !set["routes"] {
			routes = strings.Join(quickRoutes(), ",")
		}
	}
	var err error
	if c.concurrency, err = parseInts(conc); err != nil {
		return c, err
	}
	for _, r := range strings.Split(routes, ",") {
		if !contains(allRoutes(), r) {
			return c, fmt.Errorf("unknown route %q (known: %s)", r, strings.Join(allRoutes(), ","))
		}
		c.routes = append(c.routes, r)
	}
	if c.serverCPUs, err = affinity.ParseList(serverCPUs); err != nil {
		return c, err
	}
	if c.clientCPUs, err = affinity.ParseList(clientCPUs); err != nil {
		return c, err
	}
	if !c.pin {
		c.serverCPUs, c.clientCPUs = nil, nil
	}
	if c.runs < 1 || c.rounds < 1 || c.duration <= 0 {
		return c, errors.New("-runs, -rounds and -duration must be positive")
	}
	if c.root == "" {
		if c.root, err = findRoot(); err != nil {
			return c, err
		}
	}
	if c.out == "" {
		c.out = filepath.Join(c.root, "bench", "results", time.Now().UTC().Format("2006-01-02"))
		if c.quick {
			c.out = filepath.Join(c.root, "bench", "results", "tmp", "quick")
		}
	}
	if c.sources == "" {
		c.sources = sourcesDir(c.root)
	}
	if !filepath.IsAbs(c.fixture) {
		c.fixture = filepath.Join(c.root, c.fixture)
	}
	c.targets = targets
	c.notes = notes
	if len(c.targets) == 0 {
		c.targets = defaultSuite()
	}
	return c, nil
}

// defaultSuite is the suite: both binaries as processes (the static
// one in cells mode too), both images as containers, and the Node.js twin.
// thumbd runs with THUMBD_MERGE=false: a route at more than one client
// repeats one request, which merging would answer with one job for many,
// and the twin does not merge; the suite times the engine (bench hotkey
// measures merging).
func defaultSuite() []target.Spec {
	const noMerge = "THUMBD_MERGE=false"
	return []target.Spec{
		{Name: "thumbd-static", Kind: target.Process, Command: []string{"bin/thumbd-static"}, Env: []string{noMerge}},
		{Name: "thumbd-static-cells", Kind: target.Process, Command: []string{"bin/thumbd-static"}, Env: []string{"THUMBD_ENGINE=cells", noMerge}},
		{Name: "thumbd", Kind: target.Process, Command: []string{"bin/thumbd"}, Env: []string{noMerge}},
		{Name: "thumbd:scratch", Kind: target.Container, Image: "thumbd:scratch", Env: []string{noMerge}},
		{Name: "thumbd:slim", Kind: target.Container, Image: "thumbd:slim", Env: []string{noMerge}},
		{Name: "node", Kind: target.Process, Command: []string{"node", "bench/twins/node/server.mjs"}},
	}
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "bench")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod with bench/); use -root")
		}
		dir = parent
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
