package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// engineJobs is how many jobs the engine ran (libvips' processing time
// is observed once per job).
func engineJobs(t *testing.T, d deps) uint64 {
	t.Helper()
	var m dto.Metric
	if err := d.metrics.Processing.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// dirServer serves a source directory holding files, with cfg changed by
// edit.
func dirServer(t *testing.T, files map[string][]byte, edit func(*config)) (string, deps) {
	t.Helper()
	dir := t.TempDir()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(t)
	cfg.SourceDir = dir
	if edit != nil {
		edit(&cfg)
	}
	srv, d := newTestServer(t, cfg)
	return srv.URL, d
}

// holdSlot takes every processing slot (concurrency 1), so that jobs wait
// in the queue; release lets them run.
func holdSlot(t *testing.T, d deps) (release func()) {
	t.Helper()
	held, err := d.thumbs.Gate.Admit(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(held.Release) }
	t.Cleanup(release)
	return release
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// concurrently sends GET u n times at once.
func concurrently(t *testing.T, n int, u string, header ...string) []answer {
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			s, h, b := do(t, "GET", u, nil, header...)
			answers[i] = answer{s, h, b}
		})
	}
	wg.Wait()
	return answers
}

func inFlight(d deps) int { return d.thumbs.InFlight() }

func TestIdenticalRequestsShareOneJob(t *testing.T) {
	photo := encodeJPEG(t, scene(1600, 1200), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency = 1 })
	release := holdSlot(t, d)
	const n = 20
	done := make(chan []answer)
	go func() {
		done <- concurrently(t, n, base+"/thumbnail?src=photo.jpg&w=200&h=200&format=auto", "Accept", "image/webp")
	}()
	waitFor(t, "every request to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == n-1 })
	release()
	answers := <-done
	for i, a := range answers {
		if a.status != 200 || !bytes.Equal(a.body, answers[0].body) {
			t.Fatalf("answer %d: status %d, %d bytes, first %d bytes", i, a.status, len(a.body), len(answers[0].body))
		}
		for _, h := range []string{"ETag", "Content-Type", "Content-Length", "Cache-Control", "Vary"} {
			if a.header.Get(h) != answers[0].header.Get(h) || a.header.Get(h) == "" {
				t.Errorf("answer %d: %s %q, first %q", i, h, a.header.Get(h), answers[0].header.Get(h))
			}
		}
	}
	if jobs := engineJobs(t, d); jobs != 1 {
		t.Errorf("%d engine jobs for %d identical requests, want 1", jobs, n)
	}
	if used := d.thumbs.Limits.Budget.Used(); used != 0 {
		t.Errorf("%d source bytes still held", used)
	}
	// A later request is a job of its own: nothing is kept (the cache is off).
	do(t, "GET", base+"/thumbnail?src=photo.jpg&w=200&h=200&format=auto", nil, "Accept", "image/webp")
	if jobs := engineJobs(t, d); jobs != 2 {
		t.Errorf("%d engine jobs after a later request, want 2", jobs)
	}
}

func TestDifferentRequestsDoNotMerge(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	other := encodeJPEG(t, scene(600, 800), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo, "other.jpg": other}, func(c *config) { c.Concurrency = 1 })
	release := holdSlot(t, d)
	queries := []string{"src=photo.jpg&w=100", "src=photo.jpg&w=101", "src=photo.jpg&w=100&format=webp",
		"src=photo.jpg&w=100&format=auto", "src=photo.jpg&w=100&fit=contain", "src=other.jpg&w=100"}
	var wg sync.WaitGroup
	for _, q := range queries {
		wg.Go(func() {
			if s, _, b := do(t, "GET", base+"/thumbnail?"+q, nil, "Accept", "image/avif"); s != 200 {
				t.Errorf("%s: %d %s", q, s, b)
			}
		})
	}
	waitFor(t, "every job to start", func() bool { return inFlight(d) == len(queries) })
	release()
	wg.Wait()
	if merged := testutil.ToFloat64(d.metrics.Merged); merged != 0 {
		t.Errorf("%v requests merged, want 0", merged)
	}
	if jobs := engineJobs(t, d); jobs != uint64(len(queries)) {
		t.Errorf("%d engine jobs, want %d", jobs, len(queries))
	}
}

func TestMergedWaiterLeavingCancelsNoOne(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency = 1 })
	release := holdSlot(t, d)
	u := base + "/thumbnail?src=photo.jpg&w=120"
	// The first request starts the job, then its client leaves.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	left := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	waitFor(t, "the job to start", func() bool { return inFlight(d) == 1 })
	second := make(chan answer, 1)
	go func() { s, h, b := do(t, "GET", u, nil); second <- answer{s, h, b} }()
	waitFor(t, "the second request to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == 1 })
	cancel()
	if err := <-left; err == nil {
		t.Fatal("the cancelled request was answered")
	}
	waitFor(t, "the leaver to be counted", func() bool {
		return testutil.ToFloat64(d.metrics.Rejections.WithLabelValues(string(apierr.ClientGone))) == 1
	})
	release()
	a := <-second
	if a.status != 200 || len(a.body) == 0 {
		t.Fatalf("the waiter left behind got %d %s", a.status, a.body)
	}
	if jobs := engineJobs(t, d); jobs != 1 {
		t.Errorf("%d engine jobs, want 1", jobs)
	}
}

func TestMergedWaiterKeepsItsOwnDeadline(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency, c.Deadline = 1, 2*time.Second })
	release := holdSlot(t, d)
	u := base + "/thumbnail?src=photo.jpg&w=120"
	first := make(chan answer, 1)
	go func() { s, h, b := do(t, "GET", u, nil); first <- answer{s, h, b} }()
	waitFor(t, "the job to start", func() bool { return inFlight(d) == 1 })
	time.Sleep(time.Second)
	// The second joins a second later: its own deadline is later, but the
	// job is bounded by the first's. Both get the job's 504.
	second := make(chan answer, 1)
	go func() { s, h, b := do(t, "GET", u, nil); second <- answer{s, h, b} }()
	a := <-first
	if a.status != 504 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	assertError(t, a.body, apierr.DeadlineExceeded)
	b := <-second
	if b.status != 504 {
		t.Fatalf("second: %d %s", b.status, b.body)
	}
	release()
	// The error was not kept: the next request makes the thumbnail.
	if s, _, body := do(t, "GET", u, nil); s != 200 {
		t.Fatalf("after the slot is free: %d %s", s, body)
	}
}

func TestMergedErrorsAreSharedNotKept(t *testing.T) {
	corrupt := encodeJPEG(t, scene(800, 600), 90)[:3000]
	base, d := dirServer(t, map[string][]byte{"bad.jpg": corrupt}, func(c *config) { c.Concurrency, c.CacheSize = 1, 8<<20 })
	release := holdSlot(t, d)
	done := make(chan []answer)
	go func() { done <- concurrently(t, 5, base+"/thumbnail?src=bad.jpg&w=100") }()
	waitFor(t, "every request to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == 4 })
	release()
	for i, a := range <-done {
		if a.status != 422 {
			t.Fatalf("answer %d: %d %s", i, a.status, a.body)
		}
	}
	if jobs := engineJobs(t, d); jobs != 1 {
		t.Errorf("%d engine jobs, want 1", jobs)
	}
	if s, _, _ := do(t, "GET", base+"/thumbnail?src=bad.jpg&w=100", nil); s != 422 {
		t.Fatalf("again: %d", s)
	}
	if jobs := engineJobs(t, d); jobs != 2 {
		t.Errorf("the error was kept: %d engine jobs, want 2", jobs)
	}
}

func TestIdenticalUploadsShareOneJob(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	cfg := testConfig(t)
	cfg.Concurrency = 1
	srv, d := newTestServer(t, cfg)
	release := holdSlot(t, d)
	var wg sync.WaitGroup
	bodies := make([][]byte, 5)
	for i := range bodies {
		wg.Go(func() {
			s, _, b := postThumb(t, srv.URL, "?w=90", photo)
			if s != 200 {
				t.Errorf("upload %d: %d %s", i, s, b)
			}
			bodies[i] = b
		})
	}
	waitFor(t, "every upload to join", func() bool { return testutil.ToFloat64(d.metrics.Merged) == 4 })
	// The joiners' bodies went back to the budget at once; the job holds one.
	if used := d.thumbs.Limits.Budget.Used(); used != int64(len(photo)) {
		t.Errorf("%d source bytes held while merged, want one body's %d", used, len(photo))
	}
	release()
	wg.Wait()
	for i := range bodies {
		if !bytes.Equal(bodies[i], bodies[0]) {
			t.Errorf("upload %d's answer differs", i)
		}
	}
	if jobs := engineJobs(t, d); jobs != 1 {
		t.Errorf("%d engine jobs, want 1", jobs)
	}
	if used := d.thumbs.Limits.Budget.Used(); used != 0 {
		t.Errorf("%d source bytes still held", used)
	}
}

func TestMergeOffRunsEveryRequest(t *testing.T) {
	photo := encodeJPEG(t, scene(800, 600), 90)
	base, d := dirServer(t, map[string][]byte{"photo.jpg": photo}, func(c *config) { c.Concurrency, c.Merge = 1, false })
	release := holdSlot(t, d)
	done := make(chan []answer)
	go func() { done <- concurrently(t, 5, base+"/thumbnail?src=photo.jpg&w=100") }()
	waitFor(t, "every request to queue", func() bool { return d.thumbs.Gate.Waiting() == 5 })
	release()
	for i, a := range <-done {
		if a.status != 200 {
			t.Fatalf("answer %d: %d", i, a.status)
		}
	}
	if jobs, merged := engineJobs(t, d), testutil.ToFloat64(d.metrics.Merged); jobs != 5 || merged != 0 {
		t.Errorf("THUMBD_MERGE=false: %d engine jobs, %v merged; want 5 and 0", jobs, merged)
	}
}
