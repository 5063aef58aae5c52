package main

import (
	"bytes"
	"context"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// infoJobs is how many /info jobs the engine ran (with a ThumbHash).
func infoJobs(t *testing.T, d deps) uint64 {
	t.Helper()
	var m dto.Metric
	if err := d.metrics.InfoProcessing.WithLabelValues("true").(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// /info runs the thumbnails' corridor: identical requests share one job.
func TestInfoMerges(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency = 1 })
	release := holdSlot(t, d)
	const n = 100
	done := make(chan []answer)
	go func() { done <- concurrently(t, n, base+"/info?src=photo.jpg") }()
	waitFor(t, "every request to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == n-1 })
	release()
	answers := <-done
	for i, a := range answers {
		if a.status != 200 || !bytes.Equal(a.body, answers[0].body) || a.header.Get("ETag") != answers[0].header.Get("ETag") {
			t.Fatalf("answer %d: %d %s, want the first's %s", i, a.status, a.body, answers[0].body)
		}
	}
	if info := readInfo(t, answers[0].body); info.Width != 800 || info.Bytes != int64(len(photo)) || info.ThumbHash == "" {
		t.Errorf("info %+v", info)
	}
	if jobs := infoJobs(t, d); jobs != 1 {
		t.Errorf("%d engine jobs for %d identical /info requests, want 1", jobs, n)
	}
}

// A repeated /info is answered from the result cache, with the same bytes
// and headers, and no engine job.
func TestInfoIsCached(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.CacheSize = 8 << 20 })
	s1, h1, b1 := do(t, "GET", base+"/info?src=photo.jpg", nil)
	if s1 != 200 {
		t.Fatalf("first: %d %s", s1, b1)
	}
	var took []time.Duration
	for range 21 {
		start := time.Now()
		s, h, b := do(t, "GET", base+"/info?src=photo.jpg", nil)
		took = append(took, time.Since(start))
		if s != 200 || !bytes.Equal(b, b1) || h.Get("ETag") != h1.Get("ETag") || h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != h1.Get("Content-Length") {
			t.Fatalf("repeat: %d %v %s, want %v %s", s, h, b, h1, b1)
		}
	}
	if jobs, hits := infoJobs(t, d), cacheCount(t, d, "hits"); jobs != 1 || hits != 21 {
		t.Errorf("%d engine jobs and %v cache hits for 22 identical /info requests, want 1 and 21", jobs, hits)
	}
	// A hit's 304 is the respond stage's too.
	if s, _, _ := do(t, "GET", base+"/info?src=photo.jpg", nil, "If-None-Match", h1.Get("ETag")); s != 304 {
		t.Errorf("If-None-Match on a cached /info: %d, want 304", s)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("a cached /info over loopback HTTP: p50 %s", took[len(took)/2])
}

// panicky is an engine whose every job panics, as a bug in Go code under
// the engine would.
type panicky struct{ engines.Engine }

func (panicky) Run(context.Context, thumbjob.Source, thumbjob.Job) (thumbjob.Result, error) {
	panic("a bug")
}

// A panic in a shared job ends the job, not the process: its waiters get
// a 500, counted; the service goes on.
func TestSharedJobPanicAnswersItsWaiters(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/photo.jpg", encodeJPEG(t, scene(400, 300), 90), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t)
	cfg.SourceDir, cfg.Concurrency = dir, 1
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	life := lifecycle.New()
	life.EngineStarted()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := newDeps(cfg, logger, panicky{engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}}, life, root, nil)
	srv := newTestServerFrom(t, d)
	release := holdSlot(t, d)
	done := make(chan []answer)
	go func() { done <- concurrently(t, 3, srv.URL+"/thumbnail?src=photo.jpg&w=100") }()
	waitFor(t, "every request to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == 2 })
	release()
	for i, a := range <-done {
		if a.status != 500 {
			t.Fatalf("answer %d: %d %s", i, a.status, a.body)
		}
		assertError(t, a.body, apierr.Internal)
	}
	if n := testutil.ToFloat64(d.metrics.Panics); n != 1 {
		t.Errorf("%v panics counted, want 1", n)
	}
	if _, used := d.thumbs.Gate.Memory(); used != 0 || d.thumbs.Gate.Running()+d.thumbs.Gate.Waiting() != 0 {
		t.Errorf("the panicked job kept its place: %d bytes, %d running, %d waiting", used, d.thumbs.Gate.Running(), d.thumbs.Gate.Waiting())
	}
	if s, _, _ := do(t, "GET", srv.URL+"/health", nil); s != 200 {
		t.Errorf("after the panic /health answered %d", s)
	}
}

// leaveAfterQueued starts a request for u whose client leaves once its
// job waits in the queue.
func leaveAfterQueued(t *testing.T, d deps, u string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	left := make(chan struct{})
	go func() {
		defer close(left)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the job to queue", func() bool { return d.thumbs.Gate.Waiting() == 1 })
	cancel()
	<-left
}

// A shared job whose every waiter left is cancelled when no one keeps its
// answer, so that its place (and in cells mode its cell) is free at once;
// with the cache on, it runs on to fill it.
func TestSharedJobNoOneWaitsFor(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	t.Run("cache off: cancelled", func(t *testing.T) {
		base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency = 1 })
		holdSlot(t, d)
		leaveAfterQueued(t, d, base+"/thumbnail?src=photo.jpg&w=100")
		deadline := time.Now().Add(2 * time.Second) // the request's deadline is 10 s
		for d.thumbs.Gate.Waiting() != 0 || inFlight(d) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the job no one waits for still holds its place: %d waiting, %d in flight", d.thumbs.Gate.Waiting(), inFlight(d))
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	t.Run("cache on: kept", func(t *testing.T) {
		base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency, c.CacheSize = 1, 8<<20 })
		release := holdSlot(t, d)
		u := base + "/thumbnail?src=photo.jpg&w=100"
		leaveAfterQueued(t, d, u)
		time.Sleep(100 * time.Millisecond)
		if d.thumbs.Gate.Waiting() != 1 {
			t.Fatal("the job was cancelled, though the cache would keep its answer")
		}
		release()
		waitFor(t, "the job to finish", func() bool { return inFlight(d) == 0 })
		if s, _, b := do(t, "GET", u, nil); s != 200 || cacheCount(t, d, "hits") != 1 || engineJobs(t, d) != 1 {
			t.Fatalf("after the job: %d %s, %v hits, %d jobs; want the kept answer", s, b, cacheCount(t, d, "hits"), engineJobs(t, d))
		}
	})
}

// A joiner takes the job as it is: the job's deadline is its starter's,
// so a joiner may get its 504 before its own deadline (README, "Merged
// requests").
func TestJoinerDeadlineIsTheJobs(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	const deadline = 2 * time.Second
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency, c.Deadline = 1, deadline })
	holdSlot(t, d)
	u := base + "/thumbnail?src=photo.jpg&w=120"
	first := make(chan answer, 1)
	go func() { s, h, b := do(t, "GET", u, nil); first <- answer{s, h, b} }()
	waitFor(t, "the job to start", func() bool { return inFlight(d) == 1 })
	time.Sleep(deadline / 2)
	joined := time.Now()
	s, _, b := do(t, "GET", u, nil)
	took := time.Since(joined)
	if s != 504 || took >= deadline*9/10 {
		t.Fatalf("the joiner got %d %s after %s; want the job's 504, before its own %s deadline", s, b, took, deadline)
	}
	assertError(t, b, apierr.DeadlineExceeded)
	if a := <-first; a.status != 504 || testutil.ToFloat64(d.metrics.Merged) != 1 {
		t.Fatalf("the starter: %d %s, %v merged", a.status, a.body, testutil.ToFloat64(d.metrics.Merged))
	}
}

// A conditional GET of a stale cached answer that its origin says has not
// changed is a 304, as it was before the corridor (the job revalidates, the
// respond stage compares the ETag).
func TestRevalidatedAnswerIsA304(t *testing.T) {
	photo := encodeJPEG(t, scene(80, 60), 90)
	o := newCachingOrigin(t, photo, "Cache-Control", "no-cache", "ETag", `"v1"`)
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.CacheSize = 16 << 20
	srv, d := newTestServer(t, cfg)
	u := thumbURL(srv.URL, o.URL+"/a.jpg", "w=20")
	first := get(t, u)
	if first.status != 200 {
		t.Fatalf("first: %d", first.status)
	}
	if s, _, b := do(t, "GET", u, nil, "If-None-Match", first.header.Get("ETag")); s != 304 || cacheCount(t, d, "revalidations") != 1 {
		t.Fatalf("a conditional GET revalidated with the origin: %d %s, %v revalidations; want 304", s, b, cacheCount(t, d, "revalidations"))
	}
}

// looking records the look each engine call is given, then runs the job.
type looking struct {
	engines.Engine
	looks chan thumbjob.Source
}

func (l looking) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	l.looks <- src
	return l.Engine.Run(ctx, src, job)
}

// The pipeline looks at a source once (its format sniffed, its header
// read: admission prices the job with it) and hands that look to the
// engine, which trusts it (thumb's TestRunTrustsTheLookItIsGiven): a
// thumbnail and a description each reach the engine with the format and
// the header already read.
func TestTheEngineGetsThePipelinesLook(t *testing.T) {
	cfg := testConfig(t)
	life := lifecycle.New()
	life.EngineStarted()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng := looking{engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}, make(chan thumbjob.Source, 2)}
	srv := newTestServerFrom(t, newDeps(cfg, logger, eng, life, nil, nil))
	src := encodeJPEG(t, scene(400, 300), 90)
	for _, path := range []string{"/thumbnail?w=100", "/info"} {
		if status, _, body := do(t, "POST", srv.URL+path, bytes.NewReader(src)); status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		look := <-eng.looks
		if look.Format != imagefmt.JPEG || look.Header.Format != imagefmt.JPEG || look.Header.Width != 400 || look.Header.Height != 300 || len(look.Bytes) != len(src) {
			t.Errorf("%s: the engine got %s, header %+v, %d bytes", path, look.Format, look.Header, len(look.Bytes))
		}
	}
}
