// Command soak saturates a thumbd process on loopback and checks that it
// degrades gracefully: no crash, no 5xx but deliberate 503s with
// Retry-After, /health answering throughout, every admitted thumbnail
// answered within its deadline, peak RSS under a bound; SIGTERM under load
// loses no admitted request and exits 0; a thousand slow or idle
// connections do not stop /health or /thumbnail; in cells mode, cells
// killed by SIGSEGV every second cost only their own jobs (containment).
// Each mode starts its own thumbd (the binary given, through
// internal/launch) with default settings on a free port. It holds the
// bench lock for the whole run.
//
//	go build -o bin/thumbd ./service
//	go run ./bench/cmd/soak -bin bin/thumbd          # every mode (scripts/soak.sh)
//	go run ./bench/cmd/soak -modes load -malloc jemalloc -duration 60s -clients 500
//
// The files: thumbd.go starts thumbd and reads its log, clients.go is the
// load, monitor.go the /health poller and RSS sampler, a file per mode
// (load.go, shutdown.go, slowloris.go, bursts.go, containment.go),
// checks.go what a mode must show, summary.go the report.
// Everything is bounded: the load runs for -duration with -clients
// workers, each request has a client timeout, each mode has a hard stop.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type options struct {
	bin          string
	modes        []string
	mallocs      []string
	clients      int
	duration     time.Duration
	termAfter    time.Duration
	slowConns    int
	slowBodies   int
	slowFor      time.Duration
	sources      []string
	query        string
	deadline     time.Duration
	rssBound     int64
	backoff      bool
	jsonOut      string
	env          []string
	lock         string
	killEvery    time.Duration
	heavy        []string
	heavyClients int
	heavyFor     time.Duration

	cycles       int
	burst        int
	burstClients int
	burstIdle    time.Duration
	burstTimeout time.Duration
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var o options
	var modes, mallocs, sources, env string
	var rssMB int64
	fs.StringVar(&o.bin, "bin", "bin/thumbd", "thumbd binary to run")
	fs.StringVar(&modes, "modes", "load,shutdown,slowloris", "modes to run: load, shutdown, slowloris; bursts (libvips 8.14's thread race, scripts/threadset-race.sh); containment (cells mode, a random cell killed by SIGSEGV every -kill-every)")
	fs.DurationVar(&o.killEvery, "kill-every", time.Second, "containment mode: time between cell kills")
	var heavy string
	fs.StringVar(&heavy, "heavy", "", "containment mode: sources of the heavy mix that ends the load (\"\": none)")
	fs.IntVar(&o.heavyClients, "heavy-clients", 16, "containment mode: clients of the heavy mix (fewer than the admission's places: no large upload refused half-sent)")
	fs.DurationVar(&o.heavyFor, "heavy-for", 20*time.Second, "containment mode: how much of -duration the heavy mix takes")
	fs.StringVar(&mallocs, "malloc", "glibc,arena2,jemalloc", "allocators for the load mode: glibc, arena2 (MALLOC_ARENA_MAX=2), jemalloc (LD_PRELOAD)")
	fs.IntVar(&o.clients, "clients", 500, "concurrent clients on POST /thumbnail")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "load duration")
	fs.DurationVar(&o.termAfter, "term-after", 15*time.Second, "shutdown mode: SIGTERM after this much load")
	fs.IntVar(&o.slowConns, "slow-conns", 1000, "slowloris mode: slow or idle connections")
	fs.IntVar(&o.slowBodies, "slow-bodies", 100, "slowloris mode: of those, POST /thumbnail bodies sent a byte a second (more than the 34 admission places)")
	fs.DurationVar(&o.slowFor, "slow-for", 20*time.Second, "slowloris mode: duration")
	fs.StringVar(&sources, "sources", "service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/large.jpg", "source images, cycled")
	fs.StringVar(&o.query, "query", "w=256&h=256", "thumbnail query")
	fs.DurationVar(&o.deadline, "deadline", 10*time.Second, "THUMBD_DEADLINE of the service (its default)")
	fs.BoolVar(&o.backoff, "backoff", true, "after a 503, a client waits a random time up to its Retry-After (false: retry at once)")
	fs.Int64Var(&rssMB, "rss-bound-mb", 600, "peak RSS bound for default settings, MiB")
	fs.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	fs.StringVar(&env, "env", "", "extra environment for thumbd, comma-separated K=V")
	benchlock.Flag(fs, &o.lock)
	fs.IntVar(&o.cycles, "cycles", 12, "bursts mode: bursts after the first")
	fs.IntVar(&o.burst, "burst", 32, "bursts mode: thumbnails per burst")
	fs.IntVar(&o.burstClients, "burst-clients", 16, "bursts mode: clients per burst")
	fs.DurationVar(&o.burstIdle, "burst-idle", 15*time.Second, "bursts mode: pause between bursts (libvips' worker idle timeout)")
	fs.DurationVar(&o.burstTimeout, "burst-timeout", 20*time.Second, "bursts mode: a thumbnail not answered by then is a hang")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.modes, o.mallocs, o.sources, o.heavy = split(modes), split(mallocs), split(sources), split(heavy)
	if slices.Contains(o.modes, "containment") && len(o.heavy) > 0 && o.heavyFor >= o.duration {
		return fmt.Errorf("-heavy-for %s must be less than -duration %s", o.heavyFor, o.duration)
	}
	o.rssBound = rssMB << 20
	if env != "" {
		o.env = split(env)
	}
	for _, m := range o.modes {
		if !slices.Contains([]string{"load", "shutdown", "slowloris", "bursts", "containment"}, m) {
			return fmt.Errorf("unknown mode %q", m)
		}
	}
	for _, m := range o.mallocs {
		if _, err := mallocEnv(m); err != nil && slices.Contains(o.modes, "load") {
			return err
		}
	}
	srcs, err := readAll(o.sources)
	if err != nil {
		return err
	}
	heavySrcs, err := readAll(o.heavy)
	if err != nil {
		return err
	}
	release, err := benchlock.Hold(context.Background(), o.lock, os.Stderr)
	if err != nil {
		return err
	}
	defer release()
	var results []*result
	for _, mode := range o.modes {
		switch mode {
		case "load":
			for _, m := range o.mallocs {
				r, err := loadMode(o, srcs, m)
				if err != nil {
					return err
				}
				results = append(results, r)
			}
		case "shutdown":
			r, err := shutdownMode(o, srcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		case "slowloris":
			r, err := slowlorisMode(o, srcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		case "bursts":
			r, err := burstsMode(o, srcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		case "containment":
			r, err := containmentMode(o, srcs, heavySrcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		default:
			return fmt.Errorf("unknown mode %q", mode)
		}
	}
	printSummary(stdout, results)
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	for _, r := range results {
		if len(r.Failures) > 0 {
			return fmt.Errorf("%d check(s) failed", countFailures(results))
		}
	}
	return nil
}

func readAll(paths []string) ([][]byte, error) {
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
