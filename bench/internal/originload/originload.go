// Package originload is `bench origin`: does fetching from an origin cost
// thumbd throughput? It serves the bench's sources from a file server on
// loopback (in this process, as an origin would be another machine's
// work), starts one thumbd allowed to fetch from it, and loads, at the same
// concurrency, GET /thumbnail?url= of each source against POST /thumbnail
// of the same bytes: interleaved steps, rounds in alternating order,
// server and driver pinned to different CPUs. It prints a Markdown table
// of requests/s (median of the rounds, with the range), p50 and server CPU
// per answer, and GET's ratio to POST. It holds the bench lock while it
// measures.
//
//	bench origin -- bin/thumbd-static
//	bench origin -image thumbd:scratch -rounds 5
package originload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/service/launch"
)

// config is the subcommand's flags.
type config struct {
	image, docker, query, dir, lock string
	command, env, sources           []string
	clients, rounds                 int
	duration, warmup                time.Duration
	serverCPUs, clientCPUs          []int
}

func parse(args []string, stderr io.Writer) (config, error) {
	c := config{}
	fs := flag.NewFlagSet("origin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.image, "image", "", "a container image, on the host network (else: the command after --)")
	fs.StringVar(&c.docker, "docker", "docker", "docker client to run")
	fs.Func("env", "KEY=VALUE for thumbd (repeatable)", func(v string) error { c.env = append(c.env, v); return nil })
	names := fs.String("sources", "small,large", "the bench sources to serve and POST (comma-separated)")
	fs.StringVar(&c.dir, "source-dir", "bench/results/tmp/sources", "where the sources are (made when missing)")
	fs.StringVar(&c.query, "query", "w=256&h=256", "thumbnail options, the same for GET and POST")
	fs.IntVar(&c.clients, "clients", 10, "concurrent clients")
	fs.IntVar(&c.rounds, "rounds", 3, "interleaved rounds; the report gives their median")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per step")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load before each step")
	serverCPUs := fs.String("server-cpus", "1", "CPUs for thumbd (\"\": not pinned)")
	clientCPUs := fs.String("client-cpus", "0", "CPUs for this driver: the load generator and the origin (\"\": not pinned)")
	fs.StringVar(&c.lock, "lock", benchlock.Path, "flock held while measuring (\"\" for none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench origin [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.command = fs.Args()
	c.sources = strings.Split(*names, ",")
	var err error
	if c.serverCPUs, err = affinity.ParseList(*serverCPUs); err != nil {
		return c, err
	}
	if c.clientCPUs, err = affinity.ParseList(*clientCPUs); err != nil {
		return c, err
	}
	if (c.image == "") == (len(c.command) == 0) || c.clients < 1 || c.rounds < 1 || c.duration <= 0 || c.warmup < 0 {
		fs.Usage()
		return c, errors.New("want -image or a command, not both; -clients, -rounds and -duration positive")
	}
	return c, nil
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	paths, err := sources.Ensure(c.dir, c.sources...)
	if err != nil {
		return err
	}
	bodies := make([][]byte, len(paths))
	for i, p := range paths {
		if bodies[i], err = os.ReadFile(p); err != nil {
			return err
		}
	}
	if c.lock != "" {
		release, err := benchlock.Acquire(ctx, c.lock, stderr)
		if err != nil {
			return err
		}
		defer release()
	}
	if len(c.clientCPUs) > 0 {
		// Before the origin starts: its goroutines run on the driver's CPUs.
		if err := affinity.PinProcess(c.clientCPUs); err != nil {
			return err
		}
	}
	origin, err := serveDir(ctx, c.dir)
	if err != nil {
		return err
	}
	srv, err := start(ctx, c, origin)
	if err != nil {
		return err
	}
	defer srv.Stop(5 * time.Second)
	pid, err := srv.PID(ctx)
	if err != nil {
		return err
	}

	modes := []string{"POST", "GET ?url="}
	requests := make([][]load.Request, len(paths))
	for i, p := range paths {
		get := srv.URL() + "/thumbnail?url=" + url.QueryEscape(origin+"/"+filepath.Base(p)) + "&" + c.query
		requests[i] = []load.Request{
			{Method: "POST", URL: srv.URL() + "/thumbnail?" + c.query, Body: bodies[i], ContentType: "image/jpeg"},
			{Method: "GET", URL: get},
		}
		if err := sameAnswer(ctx, requests[i]); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
	}
	results := make([][][]load.Outcome, len(paths)) // [source][mode][round]
	for i := range results {
		results[i] = make([][]load.Outcome, len(modes))
	}
	for r := 0; r < c.rounds; r++ {
		for i := range paths {
			for k := range modes {
				m := (k + r) % len(modes) // alternate which mode goes first
				step := load.Step{Request: requests[i][m], Concurrency: c.clients, ServerPID: pid, Timeout: 30 * time.Second}
				if c.warmup > 0 {
					step.Duration = c.warmup
					if _, err := load.Run(step); err != nil {
						return err
					}
				}
				step.Duration = c.duration
				o, err := load.Run(step)
				if err != nil {
					return err
				}
				if err := srv.Exited(); err != nil {
					return fmt.Errorf("thumbd died under load: %w", err)
				}
				fmt.Fprintf(stderr, "round %d %s %s: %.1f rps, %d errors\n", r+1, filepath.Base(paths[i]), modes[m], o.RPS, o.ErrorCount)
				results[i][m] = append(results[i][m], o)
			}
		}
	}
	target := c.image
	if target == "" {
		target = strings.Join(c.command, " ")
	}
	fmt.Fprintf(stdout, "%s, %s, %d clients, %d rounds of %s (+%s warm-up), thumbd on CPUs %s, driver and origin on %s\n\n",
		target, c.query, c.clients, c.rounds, c.duration, c.warmup, affinity.Format(c.serverCPUs), affinity.Format(c.clientCPUs))
	fmt.Fprintln(stdout, "| source | bytes | POST rps | GET ?url= rps | GET / POST | p50 POST / GET ms | server CPU µs per answer, POST / GET | errors |")
	fmt.Fprintln(stdout, "|---|---|---|---|---|---|---|---|")
	for i, p := range paths {
		post, get := results[i][0], results[i][1]
		fmt.Fprintf(stdout, "| %s | %d | %s | %s | %.3f | %.1f / %.1f | %.0f / %.0f | %d / %d |\n",
			filepath.Base(p), len(bodies[i]), spread(post, rps), spread(get, rps), median(get, rps)/median(post, rps),
			median(post, p50), median(get, p50), median(post, cpu), median(get, cpu), errs(post), errs(get))
	}
	return nil
}

// serveDir serves dir's files on a loopback port until ctx is done and
// returns its URL: the origin.
func serveDir(ctx context.Context, dir string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	context.AfterFunc(ctx, func() { srv.Close() })
	return "http://" + ln.Addr().String(), nil
}

// start runs thumbd allowed to fetch from origin (a loopback address, hence
// THUMBD_ORIGINS_ALLOW_LOOPBACK) and waits for it to be ready.
func start(ctx context.Context, c config, origin string) (*launch.Server, error) {
	env := append([]string{"THUMBD_ORIGINS=" + origin, "THUMBD_ORIGINS_ALLOW_LOOPBACK=true"}, c.env...)
	spec := launch.Spec{Command: c.command, Env: env}
	if len(c.serverCPUs) > 0 {
		spec.StartProcess = func(cmd *exec.Cmd) error { return affinity.Start(cmd, c.serverCPUs) }
	}
	if c.image != "" {
		// The host network: the container reaches the origin on 127.0.0.1.
		spec = launch.Spec{Image: c.image, Docker: c.docker, Network: "host", Env: env}
		if len(c.serverCPUs) > 0 {
			spec.DockerArgs = []string{"--cpuset-cpus", affinity.Format(c.serverCPUs)}
		}
	}
	srv, err := launch.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := srv.WaitReady(ctx, 30*time.Second); err != nil {
		srv.Stop(0)
		return nil, err
	}
	return srv, nil
}

// sameAnswer checks, before anything is timed, that POST and GET of the
// same bytes both answer 200 with the same ETag (the same thumbnail).
func sameAnswer(ctx context.Context, reqs []load.Request) error {
	var tags []string
	for _, r := range reqs {
		req, err := http.NewRequestWithContext(ctx, r.Method, r.URL, strings.NewReader(string(r.Body)))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %d %.200s", r.Method, r.URL, resp.StatusCode, body)
		}
		tags = append(tags, resp.Header.Get("ETag"))
	}
	if tags[0] == "" || slices.ContainsFunc(tags, func(t string) bool { return t != tags[0] }) {
		return fmt.Errorf("the answers differ: ETags %q", tags)
	}
	return nil
}

func rps(o load.Outcome) float64 { return o.RPS }
func p50(o load.Outcome) float64 { return o.P50 }
func cpu(o load.Outcome) float64 { return o.CPUPerOK }

func median(os []load.Outcome, f func(load.Outcome) float64) float64 {
	v := make([]float64, len(os))
	for i, o := range os {
		v[i] = f(o)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// spread is the median with the range of the rounds.
func spread(os []load.Outcome, f func(load.Outcome) float64) string {
	lo, hi := f(os[0]), f(os[0])
	for _, o := range os {
		lo, hi = min(lo, f(o)), max(hi, f(o))
	}
	if len(os) == 1 {
		return fmt.Sprintf("%.1f", lo)
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", median(os, f), lo, hi)
}

func errs(os []load.Outcome) int64 {
	var n int64
	for _, o := range os {
		n += o.ErrorCount
	}
	return n
}
