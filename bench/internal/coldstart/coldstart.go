// Package coldstart is `bench coldstart`: a scale from zero, timed from the
// start of a fresh server to its first /health and its first thumbnail,
// next to the floor (a static Go hello-world) and the Node twin.
//
//	bench coldstart [-rounds 3] [-runs 10] [-floor bin/floor] [-twin 'node bench/twins/node/server.mjs'] \
//	    new=exec:bin/thumbd-static base=exec:/tmp/base/thumbd-static thumbd:scratch
//
// A target is IMAGE (a hardened container: read-only root filesystem, all
// capabilities dropped, no-new-privileges, user 65532, the CPU and memory
// limits of the Kubernetes manifests, the port published on 127.0.0.1 only)
// or exec:BINARY (a bare process, pinned to -server-cpus while the driver
// runs on -client-cpus), either optionally named NAME=. -floor adds a
// target that only answers /health; -twin adds the Node twin's command.
//
// Each run: start (docker run -d, or fork and exec), poll GET /health over
// raw TCP every -interval until a 200, then POST the source to
// /thumbnail?w=256&h=256 until a 200: the times from just before the start
// to each. Runs are interleaved: every target once, then again, -runs times
// a round. After each round, every target is started once more and left
// idle for -settle after its first /health: its VmRSS then is its idle RSS.
// Reported per target: median, min, max and standard deviation of each
// phase over all runs, the median's ratio to the floor's, and the binary's
// size. It holds the bench lock while it measures.
package coldstart

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/startup"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
)

type config struct {
	runs, rounds int
	source       string
	docker       string
	timeout      time.Duration
	interval     time.Duration
	settle       time.Duration
	cpus         string
	memory       string
	network      string
	lock         string
	floor, twin  string
	split        affinity.Split
	targets      []subject
}

// subject is one target as the command line named it.
type subject struct {
	name       string
	command    []string // a process; nil for a container
	image      string
	healthOnly bool // the floor: no /thumbnail
}

func parseTarget(arg string) subject {
	name, spec := arg, arg
	if n, s, ok := strings.Cut(arg, "="); ok && !strings.ContainsAny(n, ":/") {
		name, spec = n, s
	}
	if path, ok := strings.CutPrefix(spec, "exec:"); ok {
		return subject{name: name, command: strings.Fields(path)}
	}
	return subject{name: name, image: spec}
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg config
	fs := flag.NewFlagSet("coldstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.runs, "runs", 10, "cold starts per target and round")
	fs.IntVar(&cfg.rounds, "rounds", 1, "rounds; each ends with an idle start per target (idle RSS)")
	fs.StringVar(&cfg.source, "source", "bench/results/tmp/sources/small.jpg", "JPEG to POST to /thumbnail (a known source's name is made when missing)")
	fs.StringVar(&cfg.docker, "docker", "docker", "docker client to run")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "give up on a run after this long")
	fs.DurationVar(&cfg.interval, "interval", 50*time.Microsecond, "pause between two attempts (nanosleep)")
	fs.DurationVar(&cfg.settle, "settle", 2*time.Second, "idle time after the first /health before VmRSS is read")
	fs.StringVar(&cfg.cpus, "cpus", "2", "docker --cpus (the manifests' CPU limit)")
	fs.StringVar(&cfg.memory, "memory", "1280m", "docker --memory (the manifests' memory limit)")
	fs.StringVar(&cfg.network, "network", "bridge", "bridge (port published on 127.0.0.1) or host")
	fs.StringVar(&cfg.floor, "floor", "", "the floor's binary (bench/cmd/floor, built static): a target named floor that answers /health only")
	fs.StringVar(&cfg.twin, "twin", "", "the twin's command, e.g. 'node bench/twins/node/server.mjs': a target named twin")
	cfg.split.Register(fs, "the driver")
	benchlock.Flag(fs, &cfg.lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench coldstart [flags] [NAME=]IMAGE|[NAME=]exec:BINARY...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.split.Parsed(); err != nil {
		return err
	}
	if cfg.floor != "" {
		cfg.targets = append(cfg.targets, subject{name: "floor", command: []string{cfg.floor}, healthOnly: true})
	}
	if cfg.twin != "" {
		cfg.targets = append(cfg.targets, subject{name: "twin", command: strings.Fields(cfg.twin)})
	}
	for _, a := range fs.Args() {
		cfg.targets = append(cfg.targets, parseTarget(a))
	}
	if len(cfg.targets) == 0 || cfg.runs < 1 || cfg.rounds < 1 {
		fs.Usage()
		return errors.New("need at least one target, one run and one round")
	}
	body, err := sources.Read(cfg.source)
	if err != nil {
		return err
	}
	release, err := benchlock.Hold(ctx, cfg.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	if err := cfg.split.PinDriver(); err != nil {
		return err
	}

	samples := make(map[string][]sample)
	idle := make(map[string][]float64)
	for range cfg.rounds {
		for range cfg.runs {
			for _, t := range cfg.targets {
				s, err := coldStart(ctx, cfg, t, body)
				if err != nil {
					return fmt.Errorf("%s: %w", t.name, err)
				}
				samples[t.name] = append(samples[t.name], s)
			}
		}
		for _, t := range cfg.targets {
			rss, err := idleRSS(ctx, cfg, t)
			if err != nil {
				return fmt.Errorf("%s, idle: %w", t.name, err)
			}
			idle[t.name] = append(idle[t.name], rss)
		}
	}
	report(stdout, cfg, len(body), samples, idle)
	return nil
}

// report writes one table: a row per target and phase.
func report(w io.Writer, cfg config, srcBytes int, samples map[string][]sample, idle map[string][]float64) {
	pin := "not pinned"
	if len(cfg.split.Server) > 0 {
		pin = "processes on CPU " + affinity.Format(cfg.split.Server) + ", the driver on CPU " + affinity.Format(cfg.split.Client)
	}
	fmt.Fprintf(w, "cold start: from just before docker run -d (or exec) to the first GET /health 200, then to the first POST /thumbnail?w=256&h=256 (%d-byte JPEG) 200; %d round(s) of %d interleaved runs per target; %s; idle VmRSS %s after the first /health, one start per target and round; containers get --cpus %s --memory %s, %s network\n",
		srcBytes, cfg.rounds, cfg.runs, pin, cfg.settle, cfg.cpus, cfg.memory, cfg.network)
	width := len("target")
	for _, t := range cfg.targets {
		width = max(width, len(t.name))
	}
	phases := []struct {
		name, unit string
		get        func(subject) []float64
	}{
		{"started", "ms", func(t subject) []float64 {
			return ms(samples[t.name], func(s sample) time.Duration { return s.started })
		}},
		{"exec to /health", "ms", func(t subject) []float64 {
			return ms(samples[t.name], func(s sample) time.Duration { return s.health })
		}},
		{"exec to thumbnail", "ms", func(t subject) []float64 {
			if t.healthOnly {
				return nil
			}
			return ms(samples[t.name], func(s sample) time.Duration { return s.thumbnail })
		}},
		{"idle VmRSS", "MiB", func(t subject) []float64 { return idle[t.name] }},
	}
	var floor *subject
	for i := range cfg.targets {
		if cfg.targets[i].name == "floor" {
			floor = &cfg.targets[i]
		}
	}
	fmt.Fprintf(w, "%-*s %-18s %9s %9s %9s %9s %9s %9s\n", width, "target", "phase", "median", "min", "max", "stdev", "vs floor", "binary")
	for _, t := range cfg.targets {
		size := "-"
		if len(t.command) > 0 {
			if fi, err := statCommand(t.command[0]); err == nil && !strings.HasSuffix(t.command[0], "node") {
				size = fmt.Sprintf("%.2f MB", float64(fi.Size())/1e6)
			}
		}
		for _, p := range phases {
			xs := p.get(t)
			if len(xs) == 0 {
				continue
			}
			st := stats.Summarize(xs)
			ratio := "-"
			if floor != nil && floor.name != t.name {
				if f := p.get(*floor); len(f) > 0 {
					ratio = fmt.Sprintf("%.2fx", st.Median/stats.Summarize(f).Median)
				}
			}
			fmt.Fprintf(w, "%-*s %-18s %9.2f %9.2f %9.2f %9.2f %9s %9s (%s)\n", width, t.name, p.name, st.Median, st.Min, st.Max, st.Stdev, ratio, size, p.unit)
		}
	}
}

func statCommand(path string) (os.FileInfo, error) {
	p, err := exec.LookPath(path)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

func ms(ss []sample, get func(sample) time.Duration) []float64 {
	var out []float64
	for _, s := range ss {
		out = append(out, float64(get(s).Microseconds())/1000)
	}
	return out
}

// sample is one cold start, each time measured from just before the start.
type sample struct {
	started   time.Duration // docker run -d (container created and started) or fork/exec returned
	health    time.Duration // first GET /health 200
	thumbnail time.Duration // first POST /thumbnail 200, sent once /health answered
}

// start launches t: a process pinned to the server CPUs, or a hardened
// container with the manifests' limits.
func start(ctx context.Context, cfg config, t subject, log *launch.Log) (*launch.Server, error) {
	if len(t.command) > 0 {
		return launch.Start(ctx, launch.Spec{Command: t.command, Stdout: log, Stderr: log,
			StartProcess: func(cmd *exec.Cmd) error { return affinity.Start(cmd, cfg.split.Server) }})
	}
	return launch.Start(ctx, launch.Spec{Image: t.image, Docker: cfg.docker, Network: cfg.network, DockerArgs: target.Hardened(cfg.cpus, cfg.memory)})
}

// logs is what the server said, for an error.
func logs(srv *launch.Server, log *launch.Log) string {
	if srv.Cmd != nil {
		return tail(log.String(), 20)
	}
	return srv.Logs()
}

// poll sends p until it is answered 200, within the run's timeout.
func poll(ctx context.Context, cfg config, srv *launch.Server, log *launch.Log, p startup.Probe, what string) (time.Duration, error) {
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r, err := startup.Poll(pctx, srv.Addr, p, cfg.interval, srv.Exited)
	if err != nil {
		return 0, fmt.Errorf("no %s 200 within %s: %w; logs:\n%s", what, cfg.timeout, err, logs(srv, log))
	}
	return r.At.Sub(srv.Spawned), nil
}

var healthProbe = startup.Probe{Method: "GET", Path: "/health", Timeout: 2 * time.Second}

// coldStart starts t, polls /health until it answers 200, then POST
// /thumbnail until it answers 200.
func coldStart(ctx context.Context, cfg config, t subject, body []byte) (sample, error) {
	log := &launch.Log{}
	srv, err := start(ctx, cfg, t, log)
	if err != nil {
		return sample{}, err
	}
	defer srv.Stop(5 * time.Second)
	var s sample
	at, err := srv.Started(ctx)
	if err != nil {
		return s, err
	}
	s.started = at.Sub(srv.Spawned)
	if s.health, err = poll(ctx, cfg, srv, log, healthProbe, "GET /health"); err != nil {
		return s, err
	}
	if t.healthOnly {
		return s, nil
	}
	thumb := startup.Probe{Method: "POST", Path: "/thumbnail?w=256&h=256", Body: body, Timeout: 10 * time.Second}
	s.thumbnail, err = poll(ctx, cfg, srv, log, thumb, "POST /thumbnail")
	return s, err
}

// idleRSS starts t, waits for its first /health and -settle, and returns
// its main process's VmRSS in MiB.
func idleRSS(ctx context.Context, cfg config, t subject) (float64, error) {
	log := &launch.Log{}
	srv, err := start(ctx, cfg, t, log)
	if err != nil {
		return 0, err
	}
	defer srv.Stop(5 * time.Second)
	if _, err := poll(ctx, cfg, srv, log, healthProbe, "GET /health"); err != nil {
		return 0, err
	}
	select {
	case <-time.After(cfg.settle):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	pid, err := srv.PID(ctx)
	if err != nil {
		return 0, err
	}
	st, err := procfs.Read(pid)
	if err != nil {
		return 0, err
	}
	return float64(st.VmRSS) / (1 << 20), nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
