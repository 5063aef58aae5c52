// Package hotkey is `bench hotkey`: the same thumbnail asked for by many
// clients (issue 22's goals).
//
//   - merge: N clients at once ask for the same uncached thumbnail of the
//     12 MP photo; the time until all N have their answer, whether the
//     answers are the same bytes, and how many engine jobs the server's
//     metrics counted (thumbd_thumbnail_processing_seconds_count) and how
//     many requests joined a job (thumbd_thumbnail_merged_total); the same
//     build with THUMBD_MERGE=false (every request its own job, as today),
//     and with -baseline another build (today's main).
//   - cache: with THUMBD_CACHE_SIZE set, a cache hit (the same URL) against
//     a miss (every request another w, so every one is a job) at -clients
//     clients: requests/s and p50.
//   - memory: a stream of distinct keys (the large photo as PNG, each a
//     new w) against a cache bounded at -cache-bound: the cache's bytes
//     (thumbd_cache_bytes) and the server's VmRSS, sampled, against the
//     same stream with the cache off.
//
// It holds the bench lock while it measures.
//
//	bench hotkey -- bin/thumbd
//	bench hotkey -baseline 'bin/thumbd-main' -- bin/thumbd
package hotkey

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/probe"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
)

type config struct {
	command, baseline, env        []string
	dir, lock, query              string
	clients, herd, rounds         int
	streamKeys                    int
	cacheBound                    int64
	duration                      time.Duration
	cpus                          affinity.Split
	skipMerge, skipCache, skipMem bool
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("hotkey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseline := fs.String("baseline", "", "another thumbd command (space-separated) to run the merge step against, such as today's main")
	fs.Func("env", "KEY=VALUE for every thumbd started (repeatable), such as THUMBD_MEMORY_LIMIT=201326592 to measure the memory step under a limit", func(v string) error { c.env = append(c.env, v); return nil })
	fs.StringVar(&c.dir, "source-dir", "bench/results/tmp/sources", "where the sources are (made when missing)")
	fs.StringVar(&c.query, "query", "h=200&fit=cover&format=jpeg&q=80", "options of the hot thumbnail, beside w (each merge round uses another w: uncached)")
	fs.IntVar(&c.herd, "herd", 100, "merge: clients asking at once")
	fs.IntVar(&c.rounds, "rounds", 3, "merge: rounds (the report gives their median)")
	fs.IntVar(&c.clients, "clients", 10, "cache: concurrent clients")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "cache: measured time per step")
	fs.Int64Var(&c.cacheBound, "cache-bound", 32<<20, "memory: THUMBD_CACHE_SIZE for the stream of distinct keys")
	fs.IntVar(&c.streamKeys, "stream", 1200, "memory: distinct keys streamed")
	fs.BoolVar(&c.skipMerge, "no-merge", false, "skip the merge step")
	fs.BoolVar(&c.skipCache, "no-cache", false, "skip the cache step")
	fs.BoolVar(&c.skipMem, "no-memory", false, "skip the memory step")
	c.cpus.Register(fs, "this driver")
	benchlock.Flag(fs, &c.lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench hotkey [flags] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.command = fs.Args()
	if *baseline != "" {
		c.baseline = strings.Fields(*baseline)
	}
	if err := c.cpus.Parsed(); err != nil {
		return c, err
	}
	if len(c.command) == 0 || c.herd < 1 || c.rounds < 1 || c.clients < 1 || c.duration <= 0 || c.cacheBound < 1 || c.streamKeys < 1 {
		fs.Usage()
		return c, errors.New("want a command; -herd, -rounds, -clients, -duration, -cache-bound and -stream positive")
	}
	return c, nil
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	paths, err := sources.Ensure(c.dir, "photo12", "large")
	if err != nil {
		return err
	}
	photo, large := filepath.Base(paths[0]), filepath.Base(paths[1])
	release, err := benchlock.Hold(ctx, c.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	if err := c.cpus.PinDriver(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "thumbd: %s; thumbd on CPUs %s, driver on %s\n\n", strings.TrimSpace(strings.Join(c.env, " ")+" "+strings.Join(c.command, " ")), affinity.Format(c.cpus.Server), affinity.Format(c.cpus.Client))
	if !c.skipMerge {
		fmt.Fprintf(stdout, "## Merge: %d clients at once, the same uncached %s thumbnail (%s), %d rounds\n\n", c.herd, photo, c.query, c.rounds)
		fmt.Fprintln(stdout, "| build | all answered, median s (range) | one alone, ms | engine jobs per herd | merged per herd | identical bytes |")
		fmt.Fprintln(stdout, "|---|---|---|---|---|---|")
		type build struct {
			command []string
			env     string
		}
		builds := []build{{c.command, ""}, {c.command, "THUMBD_MERGE=false"}}
		if len(c.baseline) > 0 {
			builds = append(builds, build{c.baseline, ""})
		}
		for _, b := range builds {
			row, err := mergeStep(ctx, c, b.command, b.env, photo, stderr)
			if err != nil {
				return fmt.Errorf("merge step, %s: %w", strings.Join(b.command, " "), err)
			}
			fmt.Fprintln(stdout, row)
		}
		fmt.Fprintln(stdout)
	}
	if !c.skipCache {
		out, err := cacheStep(ctx, c, photo, stderr)
		if err != nil {
			return fmt.Errorf("cache step: %w", err)
		}
		fmt.Fprintln(stdout, out)
	}
	if !c.skipMem {
		out, err := memoryStep(ctx, c, large, stderr)
		if err != nil {
			return fmt.Errorf("memory step: %w", err)
		}
		fmt.Fprintln(stdout, out)
	}
	return nil
}

// start runs a thumbd serving the source directory.
func start(ctx context.Context, c config, command []string, env ...string) (*launch.Server, int, error) {
	abs, err := filepath.Abs(c.dir)
	if err != nil {
		return nil, 0, err
	}
	spec := launch.Spec{Command: command, Env: append(append([]string{"THUMBD_SOURCE_DIR=" + abs, "THUMBD_LOG_LEVEL=warn"}, c.env...), env...)}
	if len(c.cpus.Server) > 0 {
		spec.StartProcess = func(cmd *exec.Cmd) error { return affinity.Start(cmd, c.cpus.Server) }
	}
	srv, err := launch.Start(ctx, spec)
	if err != nil {
		return nil, 0, err
	}
	if err := srv.WaitReady(ctx, 30*time.Second); err != nil {
		srv.Stop(0)
		return nil, 0, err
	}
	pid, err := srv.PID(ctx)
	if err != nil {
		srv.Stop(0)
		return nil, 0, err
	}
	return srv, pid, nil
}

// mergeStep is one build's merge rounds, as a table row.
func mergeStep(ctx context.Context, c config, command []string, env, photo string, stderr io.Writer) (string, error) {
	var envs []string
	if env != "" {
		envs = append(envs, env)
	}
	srv, _, err := start(ctx, c, command, envs...)
	if err != nil {
		return "", err
	}
	defer srv.Stop(5 * time.Second)
	base := srv.URL()
	url := func(w int) string { return fmt.Sprintf("%s/thumbnail?src=%s&w=%d&%s", base, photo, w, c.query) }
	// One alone, uncached (another w), after a warm-up of another.
	if s, _, err := probe.Get(ctx, http.DefaultClient, url(190)); err != nil || s != 200 {
		return "", fmt.Errorf("warm-up: %d %v", s, err)
	}
	began := time.Now()
	if s, _, err := probe.Get(ctx, http.DefaultClient, url(191)); err != nil || s != 200 {
		return "", fmt.Errorf("one alone: %d %v", s, err)
	}
	alone := time.Since(began)
	var walls []float64
	var jobs, merged []float64
	identical := true
	for r := range c.rounds {
		jobs0, err := probe.Metric(ctx, base, "thumbd_thumbnail_processing_seconds_count")
		if err != nil {
			return "", err
		}
		merged0, _ := probe.Metric(ctx, base, "thumbd_thumbnail_merged_total")
		wall, same, err := herd(ctx, c.herd, url(200+r))
		if err != nil {
			return "", err
		}
		jobs1, _ := probe.Metric(ctx, base, "thumbd_thumbnail_processing_seconds_count")
		merged1, _ := probe.Metric(ctx, base, "thumbd_thumbnail_merged_total")
		walls, jobs, merged = append(walls, wall.Seconds()), append(jobs, jobs1-jobs0), append(merged, merged1-merged0)
		identical = identical && same
		fmt.Fprintf(stderr, "merge %s round %d: %.3f s, %v jobs, %v merged, identical %t\n", command[0], r+1, wall.Seconds(), jobs1-jobs0, merged1-merged0, same)
	}
	if err := srv.Exited(); err != nil {
		return "", fmt.Errorf("thumbd died: %w", err)
	}
	return fmt.Sprintf("| `%s` | %.3f (%.3f-%.3f) | %.1f | %s | %s | %t |", strings.TrimSpace(env+" "+strings.Join(command, " ")), median(walls), slices.Min(walls), slices.Max(walls),
		float64(alone.Microseconds())/1000, list(jobs), list(merged), identical), nil
}

// herd sends n GETs of u at once, each on a connection of its own made
// beforehand, and times until the last answer; same reports whether every
// answer was a 200 with the same bytes.
func herd(ctx context.Context, n int, u string) (time.Duration, bool, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	// Open the n connections first: the herd then measures the thumbnail,
	// not n TCP handshakes.
	var warm sync.WaitGroup
	for range n {
		warm.Go(func() { probe.Get(ctx, client, strings.SplitN(u, "/thumbnail", 2)[0]+"/health") })
	}
	warm.Wait()
	bodies := make([][]byte, n)
	statuses := make([]int, n)
	errs := make([]error, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			statuses[i], bodies[i], errs[i] = probe.Get(ctx, client, u)
		})
	}
	time.Sleep(50 * time.Millisecond) // every goroutine at the gate
	began := time.Now()
	close(gate)
	wg.Wait()
	wall := time.Since(began)
	same := true
	for i := range n {
		if errs[i] != nil {
			return 0, false, errs[i]
		}
		same = same && statuses[i] == 200 && bytes.Equal(bodies[i], bodies[0])
	}
	return wall, same, nil
}

// closedLoop runs clients that each send the next request as soon as the
// last is answered, for d: requests/s and p50 ms of the 200s.
func closedLoop(ctx context.Context, clients int, d time.Duration, next func() string) (float64, float64, int, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	var mu sync.Mutex
	var lat []float64
	var failed atomic.Int64
	end := time.Now().Add(d)
	began := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(end) {
				t := time.Now()
				s, _, err := probe.Get(ctx, client, next())
				if err != nil || s != 200 {
					failed.Add(1)
					continue
				}
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				lat = append(lat, ms)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(began).Seconds()
	if len(lat) == 0 {
		return 0, 0, int(failed.Load()), errors.New("no request answered 200")
	}
	return float64(len(lat)) / wall, median(lat), int(failed.Load()), nil
}

// cacheStep compares a hit with a miss on the 12 MP photo.
func cacheStep(ctx context.Context, c config, photo string, stderr io.Writer) (string, error) {
	srv, _, err := start(ctx, c, c.command, "THUMBD_CACHE_SIZE=268435456")
	if err != nil {
		return "", err
	}
	defer srv.Stop(5 * time.Second)
	base := srv.URL()
	hot := fmt.Sprintf("%s/thumbnail?src=%s&w=200&%s", base, photo, c.query)
	if s, _, err := probe.Get(ctx, http.DefaultClient, hot); err != nil || s != 200 {
		return "", fmt.Errorf("first request: %d %v", s, err)
	}
	var n atomic.Int64
	miss := func() string {
		i := n.Add(1)
		return fmt.Sprintf("%s/thumbnail?src=%s&w=%d&%s", base, photo, 300+i%3000, c.query)
	}
	missRPS, missP50, missFailed, err := closedLoop(ctx, c.clients, c.duration, miss)
	if err != nil {
		return "", fmt.Errorf("misses: %w", err)
	}
	fmt.Fprintf(stderr, "cache miss: %.1f rps, p50 %.2f ms, %d failed\n", missRPS, missP50, missFailed)
	hits0, _ := probe.Metric(ctx, base, "thumbd_cache_hits_total")
	hitRPS, hitP50, hitFailed, err := closedLoop(ctx, c.clients, c.duration, func() string { return hot })
	if err != nil {
		return "", fmt.Errorf("hits: %w", err)
	}
	hits1, _ := probe.Metric(ctx, base, "thumbd_cache_hits_total")
	fmt.Fprintf(stderr, "cache hit: %.1f rps, p50 %.3f ms, %d failed, %v hits counted\n", hitRPS, hitP50, hitFailed, hits1-hits0)
	if err := srv.Exited(); err != nil {
		return "", fmt.Errorf("thumbd died: %w", err)
	}
	return fmt.Sprintf("## Cache: %s, %d clients, %s per step (THUMBD_CACHE_SIZE=256 MiB)\n\n"+
		"| request | requests/s | p50 ms | failed |\n|---|---|---|---|\n"+
		"| miss (every request another w: one job each) | %.1f | %.2f | %d |\n"+
		"| hit (the same URL; %v hits counted by thumbd) | %.1f | %.3f | %d |\n\n"+
		"hit / miss requests/s: %.1fx\n", photo, c.clients, c.duration, missRPS, missP50, missFailed, hits1-hits0, hitRPS, hitP50, hitFailed, hitRPS/missRPS), nil
}

// memoryStep streams distinct keys against a bounded cache and against
// none, sampling the cache's bytes and the server's VmRSS.
func memoryStep(ctx context.Context, c config, large string, stderr io.Writer) (string, error) {
	type arm struct {
		name                          string
		env                           []string
		rssStart, rssPeak, rssEnd     int64
		cacheMax, cacheEnd, evictions float64
		entries                       float64
	}
	arms := []arm{{name: "cache off"}, {name: fmt.Sprintf("cache bound %d", c.cacheBound), env: []string{"THUMBD_CACHE_SIZE=" + strconv.FormatInt(c.cacheBound, 10)}}}
	for i := range arms {
		a := &arms[i]
		srv, pid, err := start(ctx, c, c.command, a.env...)
		if err != nil {
			return "", err
		}
		base := srv.URL()
		u := func(k int) string {
			return fmt.Sprintf("%s/thumbnail?src=%s&w=%d&h=%d&format=png", base, large, 200+k%400, 200+k/400)
		}
		probe.Get(ctx, http.DefaultClient, u(c.streamKeys+1)) // warm
		st, err := procfs.Read(pid)
		if err != nil {
			srv.Stop(0)
			return "", err
		}
		a.rssStart = st.VmRSS
		var next atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var peak atomic.Int64
		var cacheMax atomic.Int64
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			for {
				if st, err := procfs.Read(pid); err == nil && st.VmRSS > peak.Load() {
					peak.Store(st.VmRSS)
				}
				if v, err := probe.Metric(ctx, base, "thumbd_cache_bytes"); err == nil && int64(v) > cacheMax.Load() {
					cacheMax.Store(int64(v))
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		var failed atomic.Int64
		for range 2 {
			wg.Go(func() {
				for k := int(next.Add(1)); k <= c.streamKeys; k = int(next.Add(1)) {
					if s, _, err := probe.Get(ctx, http.DefaultClient, u(k)); err != nil || s != 200 {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		<-sampler
		st, _ = procfs.Read(pid)
		a.rssEnd, a.rssPeak = st.VmRSS, max(peak.Load(), st.VmRSS)
		a.cacheMax = float64(cacheMax.Load())
		a.cacheEnd, _ = probe.Metric(ctx, base, "thumbd_cache_bytes")
		a.evictions, _ = probe.Metric(ctx, base, "thumbd_cache_evictions_total")
		a.entries, _ = probe.Metric(ctx, base, "thumbd_cache_entries")
		fmt.Fprintf(stderr, "memory %s: RSS %d -> peak %d, end %d; cache max %.0f, %d failed\n", a.name, a.rssStart, a.rssPeak, a.rssEnd, a.cacheMax, failed.Load())
		if err := srv.Exited(); err != nil {
			return "", fmt.Errorf("thumbd died: %w", err)
		}
		srv.Stop(5 * time.Second)
		if failed.Load() > 0 {
			return "", fmt.Errorf("%s: %d requests failed", a.name, failed.Load())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Memory: %d distinct keys (%s as PNG, each another w x h), 2 clients\n\n", c.streamKeys, large)
	fmt.Fprintln(&b, "| arm | VmRSS after warm-up MiB | peak MiB | end MiB | cache bytes, highest sampled / end | entries at end | evictions |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|")
	for _, a := range arms {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %.1f | %.0f / %.0f | %.0f | %.0f |\n", a.name, mib(a.rssStart), mib(a.rssPeak), mib(a.rssEnd), a.cacheMax, a.cacheEnd, a.entries, a.evictions)
	}
	fmt.Fprintf(&b, "\ncache bound %d bytes; peak VmRSS with the cache less without: %.1f MiB\n", c.cacheBound, mib(arms[1].rssPeak-arms[0].rssPeak))
	return b.String(), nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', -1, 64)
		if math.IsNaN(x) {
			parts[i] = "n/a"
		}
	}
	return strings.Join(parts, ", ")
}
