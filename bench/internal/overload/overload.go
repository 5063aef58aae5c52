// Package overload is `bench overload`: one thumbd under a crowd of
// closed-loop clients against the same thumbd under a few, on the same
// server: goodput (the crowd's thumbnails per second over the few's), the
// answers (504s, 503s, requests without one) beside what the server says
// it closed, and the liveness probes' p50, p99 and maximum, with their
// floor measured in the same run. It holds the bench lock while it
// measures.
//
//	bench overload -env THUMBD_MEMORY_LIMIT=268435456 -- bin/thumbd-static
//	bench overload -admin -env THUMBD_ENGINE=cells -- bin/thumbd-static
//	bench overload -image thumbd:scratch -memory 512m
//
// The probes are a kubelet's: a new connection and a GET each, a 1 s
// timeout, one at a time, every 20 ms so that a 5 s step takes at least
// 200 (a run's p99 is then the third slowest, not the slowest of 20). They
// come from a process of their own (`bench probe`), moved into a CPU
// cgroup of its own before it begins (probe.DefaultCgroup: thumbd-probe
// under cgroup v1's cpu controller or v2's root), never from the load
// generator's process. Each step probes two servers at once, from two such
// processes: thumbd (/health and /ready in turn, on the serving port, or
// the admin port with -admin), and the floor's idle server (`bench hello`,
// a static Go hello-world answering /health) under the same load. The
// report states the crowd's probe p99 against the floor: thumbd's own p99
// at the few clients, where nothing queues, and the idle server's p99
// under the crowd, which is what the machine alone costs a probe.
package overload

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/memory"
	"github.com/thumbd/thumbd/bench/internal/probe"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
)

// minProbes is the fewest probes of a server in a step for its p99 to be
// more than its slowest few: fewer are reported as such.
const minProbes = 200

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("overload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tf target.Flags
	tf.Register(fs, "a container image, run hardened with -cpus and -memory, host network (else: the command after --)")
	cpus := fs.String("cpus", "2", "container --cpus")
	mem := fs.String("memory", "none", "container --memory (\"none\": no limit); a process's limit is -env THUMBD_MEMORY_LIMIT")
	src := fs.String("source", "bench/results/tmp/sources/photo12.jpg", "image every client POSTs (a known source's name is made when missing)")
	query := fs.String("query", "w=256&h=256", "thumbnail query")
	steps := fs.String("clients", "10,500", "clients of each step, in order on the same server: the first is the floor's, the last the crowd's")
	duration := fs.Duration("duration", 5*time.Second, "load of each step")
	distinct := fs.Bool("distinct", true, "every request its own job (THUMBD_MERGE=false), as the overload table measures, not merged into one")
	admin := fs.Bool("admin", false, "start thumbd with THUMBD_ADMIN_PORT on a free port and probe it there, as the manifests do")
	every := fs.Duration("probe-every", 20*time.Millisecond, "start a probe of each server this often (one at a time)")
	timeout := fs.Duration("probe-timeout", time.Second, "a probe with no whole answer by then has failed")
	cgroup := fs.String("probe-cgroup", probe.DefaultCgroup(), "the CPU cgroup directory the probers run in, made if missing (\"none\": the driver's)")
	quick := fs.Bool("quick", false, "a smoke run: 2 and 10 clients, 1 s steps")
	jsonOut := fs.String("json", "", "also write the run's figures to this file")
	var lock string
	benchlock.Flag(fs, &lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench overload [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := tf.Parsed(fs); err != nil {
		fs.Usage()
		return err
	}
	if *quick {
		*steps, *duration = "2,10", time.Second
	}
	var clients []int
	for _, f := range strings.Split(*steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-clients %q: want positive counts", *steps)
		}
		clients = append(clients, n)
	}
	if len(clients) < 2 || *duration <= 0 || *every <= 0 || *timeout <= 0 {
		fs.Usage()
		return errors.New("want two client counts at least, and -duration, -probe-every and -probe-timeout positive")
	}
	if *cgroup == "none" {
		*cgroup = ""
	}
	body, err := sources.Read(*src)
	if err != nil {
		return err
	}
	release, err := benchlock.Hold(ctx, lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	var env []string
	if *distinct {
		env = append(env, "THUMBD_MERGE=false")
	}
	spec := tf.Spec("host", target.Hardened(*cpus, *mem), env)
	spec.Stdout, spec.Stderr = stderr, stderr
	name := tf.Name()
	if tf.Image != "" {
		name += " --memory " + *mem
	}
	r := runner{name: name, source: filepath.Base(*src), query: *query, body: body, duration: *duration, admin: *admin,
		prober: probe.ProberSpec{Every: *every, Timeout: *timeout, Cgroup: *cgroup}}
	res, err := r.measure(ctx, spec, clients)
	if err != nil {
		return err
	}
	res.report(stdout)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// runner is one server's run.
type runner struct {
	name, source, query string
	body                []byte
	duration            time.Duration
	admin               bool
	prober              probe.ProberSpec
}

// Result is a run's figures (the -json document).
type Result struct {
	Target  string  `json:"target"`
	Source  string  `json:"source"`
	Probed  string  `json:"probed"` // where thumbd was probed: the serving port or the admin port
	Every   string  `json:"probe_every"`
	Cgroup  string  `json:"probe_cgroup"` // "" when the probers ran in the driver's cgroup
	Steps   []Step  `json:"steps"`
	Goodput float64 `json:"goodput"` // the last step's thumbnails/s over the first's
}

// Step is one load step's figures.
type Step struct {
	Clients      int                `json:"clients"`
	Load         load.Outcome       `json:"load"`
	Lost         int                `json:"lost"`           // requests with no answer the client could tell from a refusal
	ResetUnread  int                `json:"refused_unread"` // requests that ended in a reset or EOF, as a refusal's unread upload does
	Server       map[string]float64 `json:"server,omitempty"`
	Probes       probe.Summary      `json:"probes"`        // thumbd's
	FloorProbes  probe.Summary      `json:"floor_probes"`  // the idle Go server's, under the same load
	ProbesByPath map[string]float64 `json:"probes_p99_ms"` // thumbd's p99 by path
}

// measure starts thumbd and the floor's server, then runs every step
// with both probed.
func (r runner) measure(ctx context.Context, spec launch.Spec, clients []int) (*Result, error) {
	srv, adminURL, pid, err := target.StartReady(ctx, spec, r.admin)
	if err != nil {
		return nil, err
	}
	defer srv.Stop(5 * time.Second)
	floor, stopFloor, err := probe.StartHello(r.prober.Self)
	if err != nil {
		return nil, err
	}
	defer stopFloor()
	probed, probedAt := srv.URL(), "the serving port"
	if adminURL != "" {
		probed, probedAt = adminURL, "the admin port"
	}
	res := &Result{Target: r.name, Source: r.source, Probed: probedAt, Every: r.prober.Every.String(), Cgroup: r.prober.Cgroup}
	for _, c := range clients {
		st, cgroup, err := r.step(ctx, srv, pid, probed, floor, c)
		if err != nil {
			return nil, err
		}
		res.Cgroup = cgroup
		res.Steps = append(res.Steps, st)
		if died := srv.Exited(); died != nil {
			return nil, fmt.Errorf("the server died at %d clients: %w", c, died)
		}
	}
	res.Goodput = stats.Ratio(res.Steps[len(res.Steps)-1].Load.RPS, res.Steps[0].Load.RPS)
	return res, nil
}

// step loads srv with clients for the duration while both servers are
// probed; the probers' cgroup ("" if they could not be moved).
func (r runner) step(ctx context.Context, srv *launch.Server, pid int, probed, floor string, clients int) (Step, string, error) {
	before := probe.Series(ctx, probed)
	ps := r.prober
	ps.URLs = []string{probed + "/health", probed + "/ready"}
	own, err := probe.StartProber(ps)
	if err != nil {
		return Step{}, "", err
	}
	ps.URLs = []string{floor + "/health"}
	idle, err := probe.StartProber(ps)
	if err != nil {
		own.Stop()
		return Step{}, "", err
	}
	o, err := load.Run(load.Step{
		Request:     load.Request{Method: "POST", URL: srv.URL() + "/thumbnail?" + r.query, Body: r.body, ContentType: "application/octet-stream"},
		Concurrency: clients, Duration: r.duration, ServerPID: pid,
	})
	samples, perr := own.Stop()
	floorSamples, ferr := idle.Stop()
	if err = errors.Join(err, perr, ferr); err != nil {
		return Step{}, "", err
	}
	st := Step{Clients: clients, Load: o, Probes: samples.Summary(), FloorProbes: floorSamples.Summary(), ProbesByPath: map[string]float64{}}
	st.Lost, st.ResetUnread = memory.TransportErrors(o)
	for _, path := range []string{"/health", "/ready"} {
		var of probe.Samples
		for _, s := range samples {
			if strings.HasSuffix(s.URL, path) {
				of = append(of, s)
			}
		}
		st.ProbesByPath[path] = of.Summary().P99
	}
	if after := probe.Series(ctx, probed); after != nil && before != nil {
		st.Server = map[string]float64{}
		for k, v := range after {
			if strings.HasPrefix(k, "thumbd_connections_") && strings.Contains(k, "_total") && v != before[k] {
				st.Server[strings.TrimPrefix(k, "thumbd_connections_")] = v - before[k]
			}
		}
	}
	cgroup := own.Cgroup
	if idle.Cgroup == "" {
		cgroup = ""
	}
	return st, cgroup, nil
}

// report writes the run's figures.
func (res *Result) report(w io.Writer) {
	for _, st := range res.Steps {
		fmt.Fprintf(w, "%s %s, %d clients: %.1f thumbnails/s in %.1f s; answers: %s\n", res.Target, res.Source, st.Clients, st.Load.RPS, st.Load.Wall, memory.Answers(st.Load))
		switch {
		case st.Server == nil:
			fmt.Fprintln(w, "  the server's connection counters: n/a (no /metrics)")
		case len(st.Server) == 0:
			fmt.Fprintln(w, "  the server's connection counters: no change")
		default:
			var parts []string
			for k, v := range st.Server {
				parts = append(parts, fmt.Sprintf("%s %.0f", k, v))
			}
			sort.Strings(parts)
			fmt.Fprintf(w, "  the server's connection counters: %s\n", strings.Join(parts, ", "))
		}
	}
	first, last := res.Steps[0], res.Steps[len(res.Steps)-1]
	fmt.Fprintf(w, "goodput: %.2f (%d clients' thumbnails/s over %d clients')\n", res.Goodput, last.Clients, first.Clients)
	where := "the CPU cgroup " + res.Cgroup
	if res.Cgroup == "" {
		where = "the driver's cgroup (none could be made: run as root, or give -probe-cgroup)"
	}
	fmt.Fprintf(w, "probes: from processes of their own in %s, a new connection each, one every %s per server\n\n", where, res.Every)
	fmt.Fprintln(w, "| probes of | clients | n | failed | p50 ms | p99 ms | max ms |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	short := false
	for _, st := range res.Steps {
		for _, row := range []struct {
			what string
			s    probe.Summary
		}{{"thumbd /health, /ready (" + res.Probed + ")", st.Probes}, {"an idle Go server /health", st.FloorProbes}} {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %.1f | %.1f | %.1f |\n", row.what, st.Clients, row.s.N, row.s.Failed, row.s.P50, row.s.P99, row.s.Max)
			short = short || row.s.N < minProbes
		}
	}
	fmt.Fprintln(w)
	p99 := last.Probes.P99
	against := func(floor float64) string {
		if r := stats.Ratio(p99, floor); r > 0 {
			return fmt.Sprintf("%.1f ms (%.2fx)", floor, r)
		}
		return "n/a"
	}
	fmt.Fprintf(w, "probe p99 at %d clients: %.1f ms; the floor: %s at %d clients, %s on an idle Go server under the same load; %d failed\n",
		last.Clients, p99, against(first.Probes.P99), first.Clients, against(last.FloorProbes.P99), last.Probes.Failed)
	if short {
		fmt.Fprintf(w, "fewer than %d probes in a step: its p99 is one of its slowest few (lengthen -duration, or shorten -probe-every)\n", minProbes)
	}
}
