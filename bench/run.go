package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/cellarms"
	"github.com/thumbd/thumbd/bench/internal/chart"
	"github.com/thumbd/thumbd/bench/internal/contract"
	"github.com/thumbd/thumbd/bench/internal/images"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/machine"
	"github.com/thumbd/thumbd/bench/internal/report"
	"github.com/thumbd/thumbd/bench/internal/results"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/startup"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/procfs"
)

// bench is one run's state.
type bench struct {
	cfg config
	// The arms' TestArms binary (when they will run), its flavour and the
	// thumbd its cells run.
	cellsBin, cellsFlavour, cellsThumbd string
	res                                 *results.Results
	in                                  contract.Inputs
	srcs                                map[string][]byte // the sources by name
	topt                                target.Options
	prog                                *progress
	out                                 io.Writer
	targets                             []results.Target // every target, skipped ones included
	bad                                 map[string]map[string]bool
}

// runSuite is the bench suite: the driver without a subcommand.
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	if cfg.render != "" {
		r, err := results.Read(cfg.render)
		if err != nil {
			return err
		}
		if len(cfg.notes) > 0 {
			r.Notes = append(r.Notes, cfg.notes...)
			if err := results.Write(cfg.render, r); err != nil {
				return err
			}
		}
		return render(filepath.Dir(cfg.render), r, stdout)
	}
	// The lock first: what exists (binaries, images, Docker) is looked at
	// when the machine is ours, not when the wait began.
	unlock, err := benchlock.Hold(ctx, cfg.lock, stdout)
	if err != nil {
		return err
	}
	defer unlock()
	b := &bench{cfg: cfg, out: stdout, bad: map[string]map[string]bool{}}
	if err := b.prepare(ctx); err != nil {
		return err
	}
	if len(cfg.clientCPUs) > 0 {
		if err := affinity.PinProcess(cfg.clientCPUs); err != nil {
			return err
		}
	}
	err = b.measure(ctx)
	b.res.Finished = time.Now().UTC()
	if werr := b.write(); werr != nil && err == nil {
		err = werr
	}
	fmt.Fprintf(stdout, "bench: report in %s (took %s)\n", filepath.Join(cfg.out, "report.md"), b.res.Finished.Sub(b.res.Started).Round(time.Second))
	return err
}

func (b *bench) prepare(ctx context.Context) error {
	cfg := b.cfg
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	logDir := filepath.Join(cfg.root, "bench", "results", "tmp")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	logFile := filepath.Join(logDir, "servers.log")
	_ = os.Remove(logFile)
	b.topt = target.Options{Dir: cfg.root, ServerCPUs: cfg.serverCPUs, LogFile: logFile, DockerNetwork: cfg.dockerNetwork}

	fixture, err := os.ReadFile(cfg.fixture)
	if err != nil {
		return fmt.Errorf("the /json fixture: %w", err)
	}
	if b.srcs, err = readSources(cfg.sources, cfg.routes); err != nil {
		return err
	}
	sizes := map[string]int{}
	for name, src := range b.srcs {
		sizes[name] = len(src)
	}

	dockerVersion, dockerErr := images.Docker(ctx)
	b.res = &results.Results{
		Schema:   results.Schema,
		Started:  time.Now().UTC(),
		Command:  invocation(),
		Baseline: cfg.baseline,
		Options: results.Options{
			Quick: cfg.quick, StartupRuns: cfg.runs, PollInterval: float64(cfg.poll) / 1e6,
			SettleSeconds: cfg.settle.Seconds(), StepSeconds: cfg.duration.Seconds(), WarmupSeconds: cfg.warmup.Seconds(), Rounds: cfg.rounds,
			Concurrency: cfg.concurrency, Pinned: cfg.pin, DockerNetwork: cfg.dockerNetwork,
			ServerCPUs: affinity.Format(cfg.serverCPUs), ClientCPUs: affinity.Format(cfg.clientCPUs),
		},
		Machine: machine.Collect(ctx, filepath.Join(cfg.root, "bench", "twins", "node"), dockerVersion),
	}
	b.res.Notes = append(b.res.Notes, cfg.notes...)
	if dockerErr != nil {
		b.res.Notes = append(b.res.Notes, "Docker is not usable here ("+dockerErr.Error()+"): container targets were not measured.")
	}
	for _, r := range cfg.routes {
		b.res.Routes = append(b.res.Routes, routeFor(r, sizes))
	}
	b.in = contract.Inputs{JSONFixture: fixture, Thumbs: thumbChecks(b.res.Routes, b.srcs), Infos: infoChecks(b.res.Routes, b.srcs)}
	if cfg.cells {
		b.prepareCellArms(ctx)
	}
	for _, spec := range cfg.targets {
		t := results.Target{Spec: spec}
		t.Skipped = skipReason(ctx, cfg.root, spec, dockerErr)
		if t.Skipped == "" && spec.Kind == target.Container {
			id, err := images.ID(ctx, spec.Image)
			if err != nil {
				t.Skipped = err.Error()
			}
			t.ImageID = id
		}
		if t.Skipped != "" {
			fmt.Fprintf(b.out, "skipping %s: %s\n", spec.Name, t.Skipped)
		}
		b.targets = append(b.targets, t)
	}
	b.res.Targets = b.targets
	return nil
}

// invocation is how this run was asked for, as the report quotes it.
// prepareCellArms builds the arms' test binary for the first build whose
// thumbd exists (static, the images' build, then slim, then dynamic: the
// quick run builds only that one); otherwise the report says why there
// are no arms.
func (b *bench) prepareCellArms(ctx context.Context) {
	for _, f := range []struct{ flavour, bin string }{{"static", "thumbd-static"}, {"slim", "thumbd-slim"}, {"dynamic", "thumbd"}} {
		if _, err := os.Stat(filepath.Join(b.cfg.root, "bin", f.bin)); err == nil {
			b.cellsFlavour, b.cellsThumbd = f.flavour, filepath.Join(b.cfg.root, "bin", f.bin)
			break
		}
	}
	if b.cellsFlavour == "" {
		b.res.Notes = append(b.res.Notes, "Cell arms not measured: no thumbd binary in bin/ (scripts/build.sh static).")
		return
	}
	// Every source the arms read, each made if missing: a directory that
	// holds photo12.jpg alone (a contract-only run's) once left large.jpg
	// unmade and the arms failed on it.
	if _, err := sources.Ensure(b.cfg.sources, cellSources()...); err != nil {
		b.res.Notes = append(b.res.Notes, "Cell arms not measured: "+err.Error())
		return
	}
	bin := filepath.Join(b.cfg.root, "bench", "results", "tmp", "cellpool-"+b.cellsFlavour+".test")
	fmt.Fprintf(b.out, "bench: building the cell arms (%s)\n", b.cellsFlavour)
	if err := cellarms.Build(ctx, b.cellsFlavour, bin); err != nil {
		b.res.Notes = append(b.res.Notes, "Cell arms not measured: "+err.Error())
		return
	}
	b.cellsBin = bin
}

func invocation() string {
	if c := os.Getenv("THUMBD_BENCH_COMMAND"); c != "" {
		return strings.TrimSpace(c)
	}
	return strings.TrimSpace("go run ./bench " + strings.Join(os.Args[1:], " "))
}

func skipReason(ctx context.Context, root string, spec target.Spec, dockerErr error) string {
	switch spec.Kind {
	case target.Process:
		bin := spec.Command[0]
		if strings.Contains(bin, "/") {
			p := bin
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			if _, err := os.Stat(p); err != nil {
				return bin + " is not built (scripts/build.sh)"
			}
		} else if _, err := exec.LookPath(bin); err != nil {
			return bin + " is not installed"
		}
		for _, a := range spec.Command[1:] {
			if strings.HasSuffix(a, ".mjs") || strings.HasSuffix(a, ".js") {
				if _, err := os.Stat(filepath.Join(root, a)); err != nil {
					return a + " does not exist yet"
				}
				if _, err := os.Stat(filepath.Join(root, filepath.Dir(a), "node_modules")); err != nil {
					return "its packages are not installed (scripts/deps.sh node)"
				}
			}
		}
	case target.Container:
		if dockerErr != nil {
			return "Docker is not usable here: " + dockerErr.Error()
		}
		if !images.Exists(ctx, spec.Image) {
			return "image " + spec.Image + " is not built (scripts/images.sh)"
		}
	}
	return ""
}

func (b *bench) active() []results.Target {
	var ts []results.Target
	for _, t := range b.targets {
		if t.Skipped == "" {
			ts = append(ts, t)
		}
	}
	return ts
}

func (b *bench) setTarget(name string, f func(*results.Target)) {
	for i := range b.targets {
		if b.targets[i].Name == name {
			f(&b.targets[i])
		}
	}
	b.res.Targets = b.targets
}

func (b *bench) measure(ctx context.Context) error {
	cfg := b.cfg
	ts := b.active()
	if len(ts) == 0 {
		return errors.New("no target can run (see the lines above)")
	}
	var spawnable, containers int
	for _, t := range ts {
		if t.Kind != target.URL {
			spawnable++
		}
		if t.Kind == target.Container {
			containers++
		}
	}
	stepEst := cfg.warmup + cfg.duration + 500*time.Millisecond
	planned := time.Duration(len(ts))*(cfg.settle+2*time.Second) +
		time.Duration(cfg.runs*spawnable)*800*time.Millisecond +
		time.Duration(len(cfg.routes)*len(cfg.concurrency)*len(ts)*cfg.rounds)*stepEst
	if cfg.imageSizes {
		planned += time.Duration(containers) * 15 * time.Second
	}
	b.prog = newProgress(b.out, planned)
	fmt.Fprintf(b.out, "bench: %d targets, planned about %s; results in %s\n", len(ts), planned.Round(time.Second), cfg.out)

	if cfg.imageSizes {
		b.imageSizes(ctx, ts)
	}
	for i, t := range ts {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.prog.step("idle memory and contract check", i+1, len(ts), t.Name, cfg.settle+2*time.Second)
		b.idleAndContract(ctx, t)
		_ = b.write()
	}
	if err := b.startups(ctx, ts); err != nil {
		return err
	}
	_ = b.write()
	if err := b.loads(ctx, ts); err != nil {
		return err
	}
	return b.cellArms(ctx)
}

// cellArms runs the cell overhead study's arms (bench cells), the
// container arm on cfg.cellsImage when Docker has it.
func (b *bench) cellArms(ctx context.Context) error {
	if b.cellsBin == "" {
		return nil
	}
	o := cellarms.Options{Flavour: b.cellsFlavour, Bin: b.cellsThumbd, TestBin: b.cellsBin,
		Samples: 30, Fresh: 15, Rounds: 3, CPUs: b.cfg.serverCPUs, Progress: b.out}
	if b.cfg.quick {
		o.Samples, o.Fresh, o.Rounds = 3, 2, 1
	}
	if b.cfg.cellsImage != "" {
		if _, err := images.ID(ctx, b.cfg.cellsImage); err == nil {
			o.Image = b.cfg.cellsImage
		} else {
			b.res.Notes = append(b.res.Notes, fmt.Sprintf("Cell arms: no container arm (%s: %v).", b.cfg.cellsImage, err))
		}
	}
	for _, name := range cellSources() {
		o.Sources = append(o.Sources, filepath.Join(b.cfg.sources, name+".jpg"))
	}
	b.prog.note("cell arms: %d rounds of %d jobs per arm and source", o.Rounds, o.Samples)
	t, err := cellarms.Measure(ctx, o)
	if err != nil {
		t.Error = err.Error()
		b.prog.note("cell arms: %v", err)
	}
	b.res.Cells = &t
	if err != nil {
		// The report still says what failed (run writes it on the way
		// out), and the run fails: a failing arm once left the bench, and
		// test-arm64.sh with it, green.
		return fmt.Errorf("cell arms: %w", err)
	}
	return nil
}

// cellSources are the bench sources the cell arms time, small to large.
func cellSources() []string { return []string{"small", "large", "photo12"} }

func (b *bench) imageSizes(ctx context.Context, ts []results.Target) {
	n := 0
	for _, t := range b.targets {
		if t.Kind == target.Container && t.Skipped == "" {
			n++
			b.prog.step("image size", n, n, t.Image, 15*time.Second)
			im := results.Image{Target: t.Name, Image: t.Image}
			ref := t.Image
			if t.ImageID != "" {
				ref = t.ImageID
			}
			var err error
			if im.Bytes, err = images.Size(ctx, ref); err == nil {
				im.GzipBytes, err = images.SavedGzipSize(ctx, ref)
			}
			if err != nil {
				im.Error = err.Error()
			}
			b.res.Images = append(b.res.Images, im)
		}
	}
}

// startHealthy starts a target and waits for its first /health 200.
func (b *bench) startHealthy(ctx context.Context, t results.Target) (*target.Instance, startup.Result, error) {
	inst, err := target.Start(ctx, t.Spec, b.topt)
	if err != nil {
		return nil, startup.Result{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, b.cfg.startTimeout)
	defer cancel()
	r, err := startup.Poll(pctx, inst.Addr, startup.Probe{Method: "GET", Path: "/health", Timeout: 2 * time.Second}, b.cfg.poll, inst.Exited)
	if err != nil {
		_ = inst.Stop()
		return nil, r, fmt.Errorf("%s never answered /health: %w", t.Name, err)
	}
	return inst, r, nil
}

func (b *bench) idleAndContract(ctx context.Context, t results.Target) {
	inst, _, err := b.startHealthy(ctx, t)
	if err != nil {
		b.res.Contract = append(b.res.Contract, results.Contract{Target: t.Name, Error: err.Error()})
		b.res.Idle = append(b.res.Idle, results.Idle{Target: t.Name, Error: err.Error()})
		b.bad[t.Name] = map[string]bool{"*": true}
		b.prog.note("%s: %v", t.Name, err)
		return
	}
	defer inst.Stop()
	if t.Kind != target.URL {
		time.Sleep(b.cfg.settle)
		idle := results.Idle{Target: t.Name}
		pid, err := inst.PID(ctx)
		if err == nil {
			idle.Status, err = procfs.Read(pid)
			idle.CellsRSS, _ = procfs.ChildrenRSS(pid)
			idle.TreePss, _ = procfs.TreePss(pid)
			if a, aerr := affinity.Allowed(pid); aerr == nil {
				b.setTarget(t.Name, func(t *results.Target) { t.Allowed = a })
			}
		}
		if err != nil {
			idle.Error = err.Error()
		}
		b.res.Idle = append(b.res.Idle, idle)
		b.prog.note("%s: VmRSS %.1f MB, VmSize %.1f MB", t.Name, float64(idle.VmRSS)/1e6, float64(idle.VmSize)/1e6)
	}
	lv := contract.Libvips(ctx, inst.BaseURL())
	if lv == "" && strings.Contains(strings.Join(t.Command, " "), "twins/node") {
		lv = b.res.Machine.SharpLibvips + " (sharp's)"
	}
	b.setTarget(t.Name, func(t *results.Target) { t.Libvips = lv })
	checks := contract.Run(ctx, inst.BaseURL(), b.in)
	b.res.Contract = append(b.res.Contract, results.Contract{Target: t.Name, Checks: checks})
	b.bad[t.Name] = contract.Failed(checks)
	for _, c := range checks {
		if !c.OK {
			b.prog.note("%s: CONTRACT MISMATCH %s: %s (its %s steps will not be timed)", t.Name, c.Name, c.Detail, c.Route)
		}
	}
}

func (b *bench) startups(ctx context.Context, ts []results.Target) error {
	var spawnable []results.Target
	for _, t := range ts {
		if t.Kind != target.URL && !b.bad[t.Name]["*"] && !b.bad[t.Name]["health"] {
			spawnable = append(spawnable, t)
		}
	}
	per := map[string]*results.Startup{}
	gaps := map[string][]float64{}
	for _, t := range spawnable {
		per[t.Name] = &results.Startup{Target: t.Name}
	}
	n := b.cfg.runs * len(spawnable)
	i := 0
	// Interleaved: run 1 of every target, then run 2 of every target, ...
	for run := 0; run < b.cfg.runs; run++ {
		for _, t := range spawnable {
			if err := ctx.Err(); err != nil {
				return err
			}
			i++
			b.prog.step("startup", i, n, fmt.Sprintf("%s run %d/%d", t.Name, run+1, b.cfg.runs), 800*time.Millisecond)
			s := per[t.Name]
			h, th, gap, err := b.startOnce(ctx, t)
			if err != nil {
				s.Errors = append(s.Errors, err.Error())
				b.prog.note("%s: %v", t.Name, err)
				continue
			}
			s.HealthMs = append(s.HealthMs, h)
			if th > 0 {
				s.ThumbnailMs = append(s.ThumbnailMs, th)
			}
			gaps[t.Name] = append(gaps[t.Name], gap)
			if th > 0 {
				b.prog.note("%s: health %.2f ms, first thumbnail %.2f ms", t.Name, h, th)
			} else {
				b.prog.note("%s: health %.2f ms", t.Name, h)
			}
		}
	}
	for _, t := range spawnable {
		s := per[t.Name]
		s.Health = stats.Summarize(s.HealthMs)
		s.Thumbnail = stats.Summarize(s.ThumbnailMs)
		s.PollGapUs = stats.Summarize(gaps[t.Name]).Mean
		b.res.Startup = append(b.res.Startup, *s)
	}
	return nil
}

// startOnce times one fresh start: milliseconds from just before the spawn
// to the first /health 200, and to the 200 of a POST /thumbnail sent as soon
// as /health answered (0 when the thumbnail route failed its contract check).
func (b *bench) startOnce(ctx context.Context, t results.Target) (health, thumb, gapUs float64, err error) {
	inst, r, err := b.startHealthy(ctx, t)
	if err != nil {
		return 0, 0, 0, err
	}
	defer inst.Stop()
	health = float64(r.At.Sub(inst.Spawned)) / 1e6
	gapUs = float64(r.MeanGap) / 1e3
	if b.bad[t.Name]["thumb-small"] {
		return health, 0, gapUs, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tr, err := startup.Poll(pctx, inst.Addr, startup.Probe{Method: "POST", Path: thumbPath("png", false), Body: b.srcs["small"], Timeout: 10 * time.Second}, b.cfg.poll, inst.Exited)
	if err != nil {
		return health, 0, gapUs, fmt.Errorf("first thumbnail: %w", err)
	}
	return health, float64(tr.At.Sub(inst.Spawned)) / 1e6, gapUs, nil
}

func (b *bench) loads(ctx context.Context, ts []results.Target) error {
	cfg := b.cfg
	total := len(cfg.routes) * len(cfg.concurrency) * len(ts) * cfg.rounds
	stepEst := cfg.warmup + cfg.duration + 500*time.Millisecond
	i := 0
	for _, rt := range b.res.Routes {
		// Fresh servers per route, so a route's memory figures are its own.
		var live []results.Target
		insts := map[string]*target.Instance{}
		pids := map[string]int{}
		for _, t := range ts {
			if reason := b.skipStep(t.Name, rt.ID); reason != "" {
				for _, c := range cfg.concurrency {
					b.res.Load = append(b.res.Load, results.LoadStep{Route: rt.ID, Target: t.Name, Concurrency: c, Skipped: reason})
					i += cfg.rounds
				}
				continue
			}
			inst, _, err := b.startHealthy(ctx, t)
			if err != nil {
				for _, c := range cfg.concurrency {
					b.res.Load = append(b.res.Load, results.LoadStep{Route: rt.ID, Target: t.Name, Concurrency: c, Skipped: err.Error()})
					i += cfg.rounds
				}
				continue
			}
			insts[t.Name] = inst
			pids[t.Name], _ = inst.PID(ctx)
			live = append(live, t)
		}
		stopAll := func() {
			for _, inst := range insts {
				_ = inst.Stop()
			}
		}
		req := load.Request{Method: rt.Method}
		if rt.Source != "" {
			// Both servers read the format from the bytes; the header is what a client would send.
			req.Body = b.srcs[rt.Source]
			req.ContentType = http.DetectContentType(req.Body)
		}
		// Interleaved: every target at 10 clients (A B A B over -rounds),
		// then every target at 100, ...
		for _, c := range cfg.concurrency {
			rounds := map[string][]results.Round{}
			dead := map[string]bool{}
			for round := 1; round <= cfg.rounds; round++ {
				for _, t := range live {
					if err := ctx.Err(); err != nil {
						stopAll()
						return err
					}
					if dead[t.Name] {
						continue
					}
					i++
					what := fmt.Sprintf("%s c=%d %s", rt.Label, c, t.Name)
					if cfg.rounds > 1 {
						what += fmt.Sprintf(" round %d/%d", round, cfg.rounds)
					}
					b.prog.step("load", i, total, what, stepEst)
					inst := insts[t.Name]
					req.URL = inst.BaseURL() + rt.Path
					if cfg.warmup > 0 {
						if _, err := load.Run(load.Step{Request: req, Concurrency: c, Duration: cfg.warmup}); err != nil {
							b.prog.note("warm-up: %v", err)
						}
					}
					o, err := load.Run(load.Step{Request: req, Concurrency: c, Duration: cfg.duration, ServerPID: pids[t.Name]})
					rd := results.Round{Outcome: o}
					if err != nil {
						rd.Failed = err.Error()
					}
					if inst.Exited() != nil {
						rd.Failed, dead[t.Name] = "the server died during the step", true
					}
					rounds[t.Name] = append(rounds[t.Name], rd)
					b.prog.note("%s: %.0f rps, p50 %.2f ms, p99 %.2f ms, errors %d, client CPU %.0f%%, server CPU %.0f%%, peak RSS %.1f MB",
						t.Name, o.RPS, o.P50, o.P99, o.ErrorCount, 100*o.ClientCPU, 100*o.ServerCPU, float64(o.ServerPeakRSS)/1e6)
				}
			}
			for _, t := range live {
				b.res.Load = append(b.res.Load, results.Combine(rt.ID, t.Name, c, rounds[t.Name]))
			}
		}
		stopAll()
		_ = b.write()
	}
	return nil
}

func (b *bench) skipStep(name, route string) string {
	bad := b.bad[name]
	switch {
	case bad["*"]:
		return "did not start for the contract check"
	case bad[route]:
		return "failed the contract check for this route: not timed"
	}
	return ""
}

// write saves the results JSON, the report and the charts.
func (b *bench) write() error {
	if err := results.Write(filepath.Join(b.cfg.out, "results.json"), b.res); err != nil {
		return err
	}
	return render(b.cfg.out, b.res, io.Discard)
}

func render(dir string, r *results.Results, w io.Writer) error {
	charts, err := chart.WriteAll(dir, r)
	if err != nil {
		return err
	}
	md := report.Render(r, charts)
	path := filepath.Join(dir, "report.md")
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(w, "wrote", path)
	return nil
}
