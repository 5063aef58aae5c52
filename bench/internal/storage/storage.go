// Package storage is `bench storage`: issue 26's goals, against a real S3
// server (versitygw, internal/s3test) on loopback.
//
//   - sources: the same thumbnail (256x256 WebP) of the 12 MP photo and of
//     the small source from a bucket (THUMBD_SOURCE=s3://...) and from a
//     directory: p50 of sequential requests, interleaved; and the cost of
//     checking a bucket object's identity on every request (a HEAD; the
//     default) against trusting it (THUMBD_SOURCE_MAX_AGE=1h), on result
//     cache hits, where nothing else is done.
//   - hit: a result store hit on a fresh process (empty memory cache) for
//     the 12 MP photo's 256-pixel WebP, against making it on a fresh
//     process with the store off.
//   - misses: -clients clients asking for thumbnails never made before
//     (missQuery: each request another key at the same cost), store off
//     and on, interleaved rounds: requests/s and p50 (the store writes
//     behind: on should be within the rounds' spread), the store's hits
//     checked to stay 0.
//   - killed: the same load for -kill-window with the store on: the store
//     killed at a sixth of it and started again at a third; 5xx answers,
//     requests/s against the store off, and the time from the store's
//     return to its next write (thumbd_result_store_writes_total).
//
// The result store is another part of issue 26 (THUMBD_RESULT_STORE): a
// build without it is measured on sources only, the rest reported n/a.
// It holds the bench lock while it measures.
//
//	bench storage -- bin/thumbd
//	bench storage -quick -- bin/thumbd
package storage

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
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
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/s3test"
)

type config struct {
	command, env       []string
	versitygw          string
	dir, lock, query   string
	samples, rounds    int
	clients            int
	duration, killSpan time.Duration
	cpus               affinity.Split
	steps              []string // which steps run, in stepNames' order
}

// stepNames are the steps, in the order they run.
var stepNames = []string{"sources", "hit", "misses", "killed"}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("storage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("env", "KEY=VALUE for every thumbd started (repeatable)", func(v string) error { c.env = append(c.env, v); return nil })
	fs.StringVar(&c.versitygw, "versitygw", os.Getenv("THUMBD_VERSITYGW"), "the versitygw binary (scripts/build-versitygw.sh prints it)")
	fs.StringVar(&c.dir, "source-dir", "bench/results/tmp/sources", "where the sources are (made when missing)")
	fs.StringVar(&c.query, "query", "h=256&fit=cover&format=webp&q=80", "the thumbnail's options beside w (256; for misses and killed, w, gravity, fx and fy are the key sequence's, so it must keep fit=cover and name none of them)")
	fs.IntVar(&c.samples, "samples", 200, "sources: sequential requests per arm and source (half in each of two interleaved passes)")
	fs.IntVar(&c.rounds, "rounds", 11, "hit: fresh processes per arm; misses: interleaved rounds per arm")
	fs.IntVar(&c.clients, "clients", 10, "misses and killed: concurrent clients")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "misses: measured time per round")
	fs.DurationVar(&c.killSpan, "kill-window", 60*time.Second, "killed: the load's length (the store is killed at 1/6, back at 1/3)")
	steps := fs.String("steps", strings.Join(stepNames, ","), "the steps to run, comma-separated: "+strings.Join(stepNames, ", "))
	quick := fs.Bool("quick", false, "a smoke run: 10 samples, 2 rounds of 1 s, a 6 s kill window")
	c.cpus.Register(fs, "this driver and versitygw")
	benchlock.Flag(fs, &c.lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench storage [flags] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *quick {
		c.samples, c.rounds, c.duration, c.killSpan = 10, 2, time.Second, 6*time.Second
	}
	c.command = fs.Args()
	for _, name := range strings.Split(*steps, ",") {
		if !slices.Contains(stepNames, name) || slices.Contains(c.steps, name) {
			return c, fmt.Errorf("-steps: %q is not one of %s, or given twice", name, strings.Join(stepNames, ", "))
		}
		c.steps = append(c.steps, name)
	}
	if err := c.cpus.Parsed(); err != nil {
		return c, err
	}
	if len(c.command) == 0 || c.versitygw == "" || c.samples < 2 || c.rounds < 1 || c.clients < 1 || c.duration <= 0 || c.killSpan < 3*time.Second {
		fs.Usage()
		return c, errors.New("want a command and -versitygw (or THUMBD_VERSITYGW); -samples at least 2, -rounds, -clients and -duration positive, -kill-window at least 3s")
	}
	return c, nil
}

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	paths, err := sources.Ensure(c.dir, "photo12", "small", "large")
	if err != nil {
		return err
	}
	release, err := benchlock.Hold(ctx, c.lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	// Pinned before versitygw starts: it runs on the driver's CPUs (it
	// inherits them), as storage would on another machine, not on thumbd's.
	if err := c.cpus.PinDriver(); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "bench-storage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	s3, err := s3test.Start(c.versitygw, work)
	if err != nil {
		return err
	}
	defer s3.Kill()
	b := &bench{c: c, s3: s3, stderr: stderr}
	for _, p := range paths {
		b.names = append(b.names, filepath.Base(p))
	}
	if b.srcDir, err = filepath.Abs(c.dir); err != nil {
		return err
	}
	if err := b.fill(ctx, paths); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "thumbd: %s; thumbd on CPUs %s, the driver and versitygw (%s, %s) on %s\n\n", strings.TrimSpace(strings.Join(c.env, " ")+" "+strings.Join(c.command, " ")),
		affinity.Format(c.cpus.Server), c.versitygw, s3.Addr, affinity.Format(c.cpus.Client))
	if b.store, err = b.hasStore(ctx); err != nil {
		return err
	}
	steps := map[string]func(context.Context) (string, error){"sources": b.sources, "hit": b.hit, "misses": b.misses, "killed": b.killed}
	for _, name := range stepNames {
		if !slices.Contains(c.steps, name) {
			continue
		}
		out, err := steps[name](ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, out)
	}
	return nil
}

type bench struct {
	c      config
	s3     *s3test.Server
	stderr io.Writer
	srcDir string
	names  []string // photo12, small, large
	store  bool     // the build has a result store
}

// The buckets: sources holds the bench's sources; a store bucket per
// process group is made as needed.
const sourceBucket = "sources"

func (b *bench) fill(ctx context.Context, paths []string) error {
	if err := b.s3.MakeBucket(ctx, sourceBucket); err != nil {
		return err
	}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := b.s3.Put(ctx, sourceBucket, filepath.Base(p), body); err != nil {
			return err
		}
	}
	return nil
}

var storeBuckets atomic.Int32

// newStore makes an empty store bucket, for THUMBD_RESULT_STORE.
func (b *bench) newStore(ctx context.Context) (string, error) {
	name := fmt.Sprintf("store%d", storeBuckets.Add(1))
	return "THUMBD_RESULT_STORE=s3://" + name + "/thumbs", b.s3.MakeBucket(ctx, name)
}

// start runs a thumbd with env (the source settings among them) and
// versitygw's AWS variables, and waits until it is ready.
func (b *bench) start(ctx context.Context, env ...string) (*launch.Server, error) {
	all := append(append(append(b.s3.Env(), "THUMBD_LOG_LEVEL=warn"), b.c.env...), env...)
	spec := launch.Spec{Command: b.c.command, Env: all}
	if len(b.c.cpus.Server) > 0 {
		spec.StartProcess = func(cmd *exec.Cmd) error { return affinity.Start(cmd, b.c.cpus.Server) }
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

func (b *bench) dirSource() string    { return "THUMBD_SOURCE=" + b.srcDir }
func (b *bench) bucketSource() string { return "THUMBD_SOURCE=s3://" + sourceBucket }

// url is the thumbnail of name, w pixels wide, with the -query options.
func (b *bench) url(srv *launch.Server, name string, w int64) string {
	return srv.URL() + "/thumbnail?src=" + name + "&w=" + strconv.FormatInt(w, 10) + "&" + b.c.query
}

// sources compares a bucket source with a directory source, then measures
// the identity check.
func (b *bench) sources(ctx context.Context) (string, error) {
	dir, err := b.start(ctx, b.dirSource())
	if err != nil {
		return "", err
	}
	defer dir.Stop(5 * time.Second)
	s3, err := b.start(ctx, b.bucketSource())
	if err != nil {
		return "", err
	}
	defer s3.Stop(5 * time.Second)
	var out strings.Builder
	fmt.Fprintf(&out, "## Sources: a bucket against a directory (%s, %d sequential requests per arm, two interleaved passes, no cache)\n\n", b.c.query, b.c.samples)
	fmt.Fprintln(&out, "| source | directory p50 ms | bucket p50 ms | bucket / directory | bucket - directory ms |")
	fmt.Fprintln(&out, "|---|---|---|---|---|")
	for _, name := range b.names[:2] {
		lat := [2][]float64{}
		for pass := range 2 {
			for i, srv := range []*launch.Server{dir, s3} {
				xs, err := sequential(ctx, b.url(srv, name, 256), b.c.samples/2)
				if err != nil {
					return "", fmt.Errorf("%s, pass %d: %w", name, pass, err)
				}
				lat[i] = append(lat[i], xs...)
			}
		}
		d, s := median(lat[0]), median(lat[1])
		fmt.Fprintf(b.stderr, "sources %s: directory %.2f ms, bucket %.2f ms\n", name, d, s)
		fmt.Fprintf(&out, "| %s | %.2f | %.2f | %.3fx | %+.2f |\n", name, d, s, s/d, s-d)
	}
	check, err := b.identityCheck(ctx)
	if err != nil {
		return "", err
	}
	return out.String() + "\n" + check, nil
}

// identityCheck is the cost of asking a bucket object's identity on every
// request: result cache hits (nothing else is done) with a HEAD each
// (THUMBD_SOURCE_MAX_AGE=0, the default) and without (1h), beside a
// directory source's hits (a stat each).
func (b *bench) identityCheck(ctx context.Context) (string, error) {
	arms := []struct{ name, env string }{
		{"directory (a stat per request)", b.dirSource()},
		{"bucket, THUMBD_SOURCE_MAX_AGE=0 (a HEAD per request)", b.bucketSource()},
		{"bucket, THUMBD_SOURCE_MAX_AGE=1h (no call)", b.bucketSource()},
	}
	var out strings.Builder
	fmt.Fprintf(&out, "## The identity check: result cache hits of %s (THUMBD_CACHE_SIZE=64 MiB), %d sequential requests per arm\n\n", b.names[1], b.c.samples)
	fmt.Fprintln(&out, "| source | hit p50 ms | hit p90 ms |")
	fmt.Fprintln(&out, "|---|---|---|")
	var p50 []float64
	for i, arm := range arms {
		env := []string{arm.env, "THUMBD_CACHE_SIZE=67108864"}
		if i == 2 {
			env = append(env, "THUMBD_SOURCE_MAX_AGE=1h")
		}
		srv, err := b.start(ctx, env...)
		if err != nil {
			return "", err
		}
		u := b.url(srv, b.names[1], 256)
		lat, err := sequential(ctx, u, b.c.samples+1)
		srv.Stop(5 * time.Second)
		if err != nil {
			return "", fmt.Errorf("%s: %w", arm.name, err)
		}
		lat = lat[1:] // the first made it
		p50 = append(p50, median(lat))
		fmt.Fprintf(&out, "| %s | %.3f | %.3f |\n", arm.name, median(lat), quantile(lat, 0.9))
	}
	fmt.Fprintf(&out, "\nthe check's cost (a HEAD on loopback): %+.3f ms per request (MAX_AGE=0 less 1h)\n", p50[1]-p50[2])
	return out.String(), nil
}

// hasStore reports whether the build has a result store: with
// THUMBD_RESULT_STORE set, its metrics are there.
func (b *bench) hasStore(ctx context.Context) (bool, error) {
	store, err := b.newStore(ctx)
	if err != nil {
		return false, err
	}
	srv, err := b.start(ctx, b.dirSource(), store)
	if err != nil {
		return false, err
	}
	defer srv.Stop(5 * time.Second)
	v, err := probe.Metric(ctx, srv.URL(), "thumbd_result_store_queue_max_bytes")
	return err == nil && v > 0, err
}

const noStore = "n/a: this build has no result store (THUMBD_RESULT_STORE); run it on a build with issue 26's store\n"

// hit times the first request of fresh processes: a store hit (the store
// filled by a first process) against making it with the store off.
func (b *bench) hit(ctx context.Context) (string, error) {
	head := fmt.Sprintf("## A store hit on a fresh process: %s %s, the first request of each of %d fresh processes per arm (memory cache empty)\n\n", b.names[0], b.c.query, b.c.rounds)
	if !b.store {
		return head + noStore, nil
	}
	store, err := b.newStore(ctx)
	if err != nil {
		return "", err
	}
	// Fill the store.
	first, err := b.start(ctx, b.dirSource(), store)
	if err != nil {
		return "", err
	}
	u := b.url(first, b.names[0], 256)
	if _, err := sequential(ctx, u, 1); err != nil {
		first.Stop(0)
		return "", err
	}
	if err := waitFor(ctx, first.URL(), "thumbd_result_store_writes_total", 1, 30*time.Second); err != nil {
		first.Stop(0)
		return "", err
	}
	first.Stop(5 * time.Second)
	var hits, makes []float64
	for r := range b.c.rounds {
		for _, arm := range []struct {
			env  []string
			into *[]float64
		}{{[]string{b.dirSource(), store}, &hits}, {[]string{b.dirSource()}, &makes}} {
			srv, err := b.start(ctx, arm.env...)
			if err != nil {
				return "", err
			}
			lat, err := sequential(ctx, b.url(srv, b.names[0], 256), 1)
			jobs, _ := probe.Metric(ctx, srv.URL(), "thumbd_thumbnail_processing_seconds_count")
			srv.Stop(5 * time.Second)
			if err != nil {
				return "", err
			}
			if arm.into == &hits && jobs != 0 {
				return "", fmt.Errorf("round %d: a fresh process with the store ran %v engine jobs, want 0 (a store hit)", r, jobs)
			}
			*arm.into = append(*arm.into, lat[0])
		}
		fmt.Fprintf(b.stderr, "hit round %d: store hit %.2f ms, made %.2f ms\n", r+1, hits[r], makes[r])
	}
	return head + "| first request | p50 ms | min-max ms |\n|---|---|---|\n" +
		fmt.Sprintf("| store hit (0 engine jobs) | %.2f | %.2f-%.2f |\n", median(hits), slices.Min(hits), slices.Max(hits)) +
		fmt.Sprintf("| made (store off) | %.2f | %.2f-%.2f |\n", median(makes), slices.Min(makes), slices.Max(makes)) +
		fmt.Sprintf("\nmade / store hit: %.1fx\n", median(makes)/median(hits)), nil
}

// The misses and killed steps' keys: every request of a process asks for
// a thumbnail it has not made (no memory cache hit, no merging, no store
// hit: each store-on process has a store of its own), all at the same
// cost. w cycles through a narrow band, so every missWidths requests cost
// the same wherever they fall in a run (a w growing through the run made
// each round slower than the last, 68 to 14 requests/s, and the ratios
// measured the growth); fx, the focal crop's centre (gravity=focal), steps
// once per cycle: which window of the same scaled image is cut costs the
// same. Every process starts the sequence from its first key, so the arms
// ask for the same thumbnails in the same order.
const (
	missW0     = 240
	missWidths = 32   // w from 240 to 271
	missFocals = 1000 // fx from 0 to 0.999
	missKeys   = missWidths * missFocals
)

// missQuery is the options of key i (0 <= i < missKeys).
func missQuery(i int) string {
	fx := strconv.FormatFloat(float64(i/missWidths%missFocals)/missFocals, 'f', 3, 64)
	return "w=" + strconv.Itoa(missW0+i%missWidths) + "&gravity=focal&fx=" + fx + "&fy=0.5"
}

// missSeq hands one process's requests their keys in order.
type missSeq struct{ n atomic.Int64 }

// next is the next key's URL at srv: the source name, the key's options,
// then the -query options (h, fit, format, q).
func (m *missSeq) next(srv *launch.Server, name, query string) func() string {
	return func() string {
		i := int(m.n.Add(1)-1) % missKeys
		return srv.URL() + "/thumbnail?src=" + name + "&" + missQuery(i) + "&" + query
	}
}

// wrapped is an error once the process was sent more requests than there
// are keys: some were asked twice, and could have been hits.
func (m *missSeq) wrapped() error {
	if n := m.n.Load(); n > missKeys {
		return fmt.Errorf("%d requests to one process, more than the %d distinct keys: shorten -duration or -kill-window", n, missKeys)
	}
	return nil
}

// missKeysText says what the misses and killed steps ask for.
const missKeysText = "a thumbnail not made before each request (w 240-271 crossed with gravity=focal's fx 0-0.999, fy 0.5)"

// storeCounts are a process's store lookups that hit and missed.
func storeCounts(ctx context.Context, srv *launch.Server) (hits, misses float64, err error) {
	if hits, err = probe.Metric(ctx, srv.URL(), "thumbd_result_store_hits_total"); err != nil {
		return 0, 0, err
	}
	misses, err = probe.Metric(ctx, srv.URL(), "thumbd_result_store_misses_total")
	return hits, misses, err
}

// misses loads thumbnails never made before, store off and on.
func (b *bench) misses(ctx context.Context) (string, error) {
	head := fmt.Sprintf("## Misses with the store on and off: %d clients, %s, %s, %d interleaved rounds of %s, directory sources\n\n", b.c.clients, b.names[2], missKeysText, b.c.rounds, b.c.duration)
	if !b.store {
		return head + noStore, nil
	}
	var rps, p50 [2][]float64
	var lookups float64
	for r := range b.c.rounds {
		for arm := range 2 {
			env := []string{b.dirSource()}
			if arm == 1 {
				store, err := b.newStore(ctx)
				if err != nil {
					return "", err
				}
				env = append(env, store)
			}
			srv, err := b.start(ctx, env...)
			if err != nil {
				return "", err
			}
			var keys missSeq
			res, err := load(ctx, b.c.clients, b.c.duration, keys.next(srv, b.names[2], b.c.query), nil)
			var hits, misses float64
			if err == nil && arm == 1 {
				hits, misses, err = storeCounts(ctx, srv)
			}
			srv.Stop(5 * time.Second)
			if err == nil {
				err = keys.wrapped()
			}
			if err != nil {
				return "", err
			}
			if res.failed > 0 {
				return "", fmt.Errorf("misses, round %d: %d requests failed", r, res.failed)
			}
			if hits != 0 {
				return "", fmt.Errorf("misses, round %d: %v store hits, want 0 (every request a key not asked before)", r, hits)
			}
			lookups += misses
			rps[arm], p50[arm] = append(rps[arm], res.rps), append(p50[arm], res.p50)
			fmt.Fprintf(b.stderr, "misses round %d, store %v: %.1f rps, p50 %.2f ms\n", r+1, arm == 1, res.rps, res.p50)
		}
	}
	return head + "| store | requests/s, median (range) | p50 ms, median (range) |\n|---|---|---|\n" +
		fmt.Sprintf("| off | %.1f (%.1f-%.1f) | %.2f (%.2f-%.2f) |\n", median(rps[0]), slices.Min(rps[0]), slices.Max(rps[0]), median(p50[0]), slices.Min(p50[0]), slices.Max(p50[0])) +
		fmt.Sprintf("| on | %.1f (%.1f-%.1f) | %.2f (%.2f-%.2f) |\n", median(rps[1]), slices.Min(rps[1]), slices.Max(rps[1]), median(p50[1]), slices.Min(p50[1]), slices.Max(p50[1])) +
		fmt.Sprintf("\non / off: requests/s %.3fx, p50 %.3fx\n", median(rps[1])/median(rps[0]), median(p50[1])/median(p50[0])) +
		fmt.Sprintf("store on: 0 store hits, %.0f store misses (thumbd_result_store_hits_total, _misses_total): every request with the store on was a store miss\n", lookups), nil
}

// killed loads thumbnails never made before while the store is killed and
// started again, against the same load with the store off.
func (b *bench) killed(ctx context.Context) (string, error) {
	head := fmt.Sprintf("## The store killed under load: %d clients, %s, %s, %s; the store killed at %s and back at %s\n\n",
		b.c.clients, b.names[2], missKeysText, b.c.killSpan, b.c.killSpan/6, b.c.killSpan/3)
	if !b.store {
		return head + noStore, nil
	}
	off, err := b.start(ctx, b.dirSource())
	if err != nil {
		return "", err
	}
	var offKeys missSeq
	base, err := load(ctx, b.c.clients, b.c.killSpan, offKeys.next(off, b.names[2], b.c.query), nil)
	off.Stop(5 * time.Second)
	if err == nil {
		err = offKeys.wrapped()
	}
	if err != nil {
		return "", err
	}
	store, err := b.newStore(ctx)
	if err != nil {
		return "", err
	}
	srv, err := b.start(ctx, b.dirSource(), store)
	if err != nil {
		return "", err
	}
	defer srv.Stop(5 * time.Second)
	var keys missSeq
	var resumed atomic.Int64 // ns from the store's return to the first write after it
	res, err := load(ctx, b.c.clients, b.c.killSpan, keys.next(srv, b.names[2], b.c.query), func(ctx context.Context, began time.Time) error {
		sleepUntil(ctx, began.Add(b.c.killSpan/6))
		if err := b.s3.Kill(); err != nil {
			return err
		}
		fmt.Fprintf(b.stderr, "killed: store killed at %s\n", time.Since(began).Round(time.Millisecond))
		sleepUntil(ctx, began.Add(b.c.killSpan/3))
		if err := b.s3.Restart(); err != nil {
			return err
		}
		back := time.Now()
		w0, err := probe.Metric(ctx, srv.URL(), "thumbd_result_store_writes_total")
		if err != nil {
			return err
		}
		for time.Since(began) < b.c.killSpan && ctx.Err() == nil {
			if w, err := probe.Metric(ctx, srv.URL(), "thumbd_result_store_writes_total"); err == nil && w > w0 {
				resumed.Store(int64(time.Since(back)))
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	})
	if err == nil {
		err = keys.wrapped()
	}
	if err != nil {
		return "", err
	}
	hits, _, err := storeCounts(ctx, srv)
	if err != nil {
		return "", err
	}
	if hits != 0 {
		return "", fmt.Errorf("killed: %v store hits, want 0 (every request a key not asked before)", hits)
	}
	after := "not within the window"
	if d := resumed.Load(); d > 0 {
		after = time.Duration(d).Round(100 * time.Millisecond).String()
	}
	return head + "| store | requests/s | answers | 5xx | other failures |\n|---|---|---|---|---|\n" +
		fmt.Sprintf("| off | %.1f | %d | %d | %d |\n", base.rps, base.answered, base.status5xx, base.failed-base.status5xx) +
		fmt.Sprintf("| on, killed and restarted | %.1f | %d | %d | %d |\n", res.rps, res.answered, res.status5xx, res.failed-res.status5xx) +
		fmt.Sprintf("\nrequests/s with the store killed / off: %.1f %%; writes resumed %s after the store's return; 0 store hits\n", 100*res.rps/base.rps, after) +
		b.phases(base, res), nil
}

// phases compares the two arms' requests/s in each part of the killed
// step's window: the store up, killed, back (its first sixth after the
// return apart: the restart and the breaker's delay).
func (b *bench) phases(off, on loadResult) string {
	k := b.c.killSpan
	parts := []struct {
		name string
		a, b time.Duration
	}{{"store up", 0, k / 6}, {"store killed", k / 6, k / 3}, {"store back, first sixth", k / 3, k / 2}, {"store back, after", k / 2, k}}
	var out strings.Builder
	out.WriteString("\n| part of the window | off requests/s | on requests/s | on / off |\n|---|---|---|---|\n")
	for _, p := range parts {
		x, y := off.rate(p.a, p.b), on.rate(p.a, p.b)
		fmt.Fprintf(&out, "| %s (%s-%s) | %.1f | %.1f | %.1f %% |\n", p.name, p.a, p.b, x, y, 100*y/x)
	}
	return out.String()
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// waitFor waits until metric name of the server at base reaches at least v.
func waitFor(ctx context.Context, base, name string, v float64, within time.Duration) error {
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		if got, err := probe.Metric(ctx, base, name); err == nil && got >= v {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not reach %v within %s", name, v, within)
}

// sequential sends n GETs of u one after another on one connection: the
// latency of each, in ms; any answer but a 200 is an error.
func sequential(ctx context.Context, u string, n int) ([]float64, error) {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	lat := make([]float64, 0, n)
	for range n {
		t := time.Now()
		s, body, err := probe.Get(ctx, client, u)
		if err != nil {
			return nil, err
		}
		if s != 200 {
			return nil, fmt.Errorf("GET %s: %d %s", u, s, body)
		}
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
	}
	return lat, nil
}

type loadResult struct {
	rps, p50                    float64
	answered, failed, status5xx int
	ends                        []time.Duration // when each 200 was answered, from the start
}

// rate is the 200s answered per second from a to b (from the start).
func (r loadResult) rate(a, b time.Duration) float64 {
	n := 0
	for _, e := range r.ends {
		if e >= a && e < b {
			n++
		}
	}
	return float64(n) / (b - a).Seconds()
}

// load runs clients that each send the next request as soon as the last
// is answered, for d; during, if given, runs beside them from the start.
func load(ctx context.Context, clients int, d time.Duration, next func() string, during func(context.Context, time.Time) error) (loadResult, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	var mu sync.Mutex
	var lat []float64
	var ends []time.Duration
	var failed, fivexx atomic.Int64
	began := time.Now()
	end := began.Add(d)
	var wg sync.WaitGroup
	duringErr := make(chan error, 1)
	if during != nil {
		wg.Go(func() { duringErr <- during(ctx, began) })
	}
	for range clients {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				t := time.Now()
				s, _, err := probe.Get(ctx, client, next())
				if err != nil || s != 200 {
					failed.Add(1)
					if s >= 500 {
						fivexx.Add(1)
					}
					continue
				}
				mu.Lock()
				lat = append(lat, float64(time.Since(t).Microseconds())/1000)
				ends = append(ends, time.Since(began))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if during != nil {
		if err := <-duringErr; err != nil {
			return loadResult{}, err
		}
	}
	if len(lat) == 0 {
		return loadResult{}, errors.New("no request answered 200")
	}
	return loadResult{rps: float64(len(lat)) / time.Since(began).Seconds(), p50: median(lat), answered: len(lat),
		failed: int(failed.Load()), status5xx: int(fivexx.Load()), ends: ends}, nil
}

func median(xs []float64) float64 { return stats.Percentiles(xs, 50)[0] }

func quantile(xs []float64, q float64) float64 { return stats.Percentiles(xs, 100*q)[0] }
