package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/resultstore"
)

// The result store against a real S3 server (versitygw on loopback,
// internal/s3test): skipped without THUMBD_VERSITYGW, failed in CI.

// s3Store is a versitygw with a bucket "results", and the settings that
// make it the result store of a service reading photo.jpg from a
// directory.
func s3Store(t *testing.T, photo []byte) (*s3test.Server, map[string]string) {
	t.Helper()
	srv := s3test.ForTest(t)
	if err := srv.MakeBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	sources, _, env := storeFixture(t, photo)
	env["THUMBD_SOURCE_DIR"] = sources
	env["THUMBD_RESULT_STORE"] = "s3://results/thumbs"
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return srv, env
}

// envList is env as NAME=VALUE lines, for a child process.
func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// TestResultStoreBucketAnswersASecondProcess: a thumbnail one thumbd process
// made is answered by a second one from the bucket, with no engine job.
func TestResultStoreBucketAnswersASecondProcess(t *testing.T) {
	_, env := s3Store(t, encodeJPEG(t, scene(800, 600), 90))
	one := startChild(t, envList(env)...)
	path := "/thumbnail?src=photo.jpg&w=256&format=webp"
	made := get(t, one.addr+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitProcessMetric(t, one.addr, "thumbd_result_store_writes_total", 1)

	two := startChild(t, envList(env)...)
	sameStoredAnswer(t, "the second process", made, get(t, two.addr+path))
	if a := get(t, two.addr+path, "If-None-Match", made.header.Get("ETag")); a.status != 304 {
		t.Errorf("If-None-Match from the bucket: %d", a.status)
	}
	if jobs := processMetric(t, two.addr, "thumbd_thumbnail_processing_seconds_count"); jobs != 0 {
		t.Errorf("the second process ran %g engine jobs, want 0", jobs)
	}
	if hits := processMetric(t, two.addr, "thumbd_result_store_hits_total"); hits != 2 {
		t.Errorf("%g store hits, want 2", hits)
	}
}

// storeLoad sends n thumbnail requests of distinct sizes from 4 clients
// and returns their statuses and the longest one took.
func storeLoad(t *testing.T, base string, first, n int) (codes map[int]int, longest time.Duration) {
	t.Helper()
	var mu sync.Mutex
	codes = map[int]int{}
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for w := range next {
				start := time.Now()
				a := get(t, fmt.Sprintf("%s/thumbnail?src=photo.jpg&w=%d", base, w))
				took := time.Since(start)
				mu.Lock()
				codes[a.status]++
				longest = max(longest, took)
				mu.Unlock()
			}
		})
	}
	for w := first; w < first+n; w++ {
		next <- w
	}
	close(next)
	wg.Wait()
	return codes, longest
}

// TestResultStoreBucketKilled: with the S3 server killed, every request
// is answered by computing (no 5xx), the breaker opens, and once the
// server is back, writes resume within the breaker's delay.
func TestResultStoreBucketKilled(t *testing.T) {
	srv, env := s3Store(t, encodeJPEG(t, scene(400, 300), 90))
	base, d := storeServer(t, storeConfig(t, "", env))
	if codes, _ := storeLoad(t, base, 10, 8); codes[200] != 8 {
		t.Fatalf("store up: %v", codes)
	}
	waitWrites(t, d, 8)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	codes, _ := storeLoad(t, base, 100, 40)
	if codes[200] != 40 {
		t.Fatalf("store killed: %v, want 40 200s", codes)
	}
	if opened := metricSum(t, d, "thumbd_result_store_breaker_opened_total"); opened < 1 {
		t.Errorf("the breaker never opened")
	}
	if skipped := metricSum(t, d, "thumbd_result_store_lookups_skipped_total"); skipped == 0 {
		t.Errorf("no lookup skipped with the store down")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	written := metricSum(t, d, "thumbd_result_store_writes_total")
	for w := 1000; metricSum(t, d, "thumbd_result_store_writes_total") == written; w++ {
		if time.Since(back) > 30*time.Second {
			t.Fatal("no write within 30 s of the store's return")
		}
		if a := get(t, fmt.Sprintf("%s/thumbnail?src=photo.jpg&w=%d", base, w)); a.status != 200 {
			t.Fatalf("store back: %d", a.status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("writes resumed %s after the store's return", time.Since(back).Round(time.Millisecond))
	// What was stored before the kill is found again.
	hits := metricSum(t, d, "thumbd_result_store_hits_total")
	if a := get(t, base+"/thumbnail?src=photo.jpg&w=10"); a.status != 200 || metricSum(t, d, "thumbd_result_store_hits_total") != hits+1 {
		t.Errorf("a thumbnail stored before the kill: %d, not a store hit", a.status)
	}
}

// TestResultStoreBucketStopped: an S3 server stopped with SIGSTOP accepts
// connections and answers nothing. No request waits past the lookup
// timeout for it, none fails, and once the breaker is open none waits at
// all; the writes queued behind it stay within their bound.
func TestResultStoreBucketStopped(t *testing.T) {
	srv, env := s3Store(t, encodeJPEG(t, scene(400, 300), 90))
	env["THUMBD_RESULT_STORE_TIMEOUT"] = "150ms"
	base, d := storeServer(t, storeConfig(t, "", env))
	if codes, _ := storeLoad(t, base, 10, 4); codes[200] != 4 {
		t.Fatalf("store up: %v", codes)
	}
	// What a miss costs with the store answering, for the comparison.
	_, normal := storeLoad(t, base, 20, 8)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer srv.Resume()
	start := time.Now()
	codes, longest := storeLoad(t, base, 100, 40)
	if codes[200] != 40 {
		t.Fatalf("store stopped: %v, want 40 200s", codes)
	}
	// One lookup timeout at most, beside what a miss takes anyway.
	if bound := normal + 150*time.Millisecond + 250*time.Millisecond; longest > bound {
		t.Errorf("the longest request took %s with the store stopped; a miss took up to %s, the lookup timeout is 150ms", longest, normal)
	}
	t.Logf("40 requests with the store stopped: %s, the longest %s (up to %s with it up)", time.Since(start).Round(time.Millisecond), longest, normal)
	if skipped := metricSum(t, d, "thumbd_result_store_lookups_skipped_total"); skipped < 30 {
		t.Errorf("%g lookups skipped by the breaker, want most of 40", skipped)
	}
	if q, bound := metricSum(t, d, "thumbd_result_store_queue_bytes"), metricSum(t, d, "thumbd_result_store_queue_max_bytes"); q > bound {
		t.Errorf("queue %g bytes, over its %g bound", q, bound)
	}
	if got := get(t, base+"/health"); got.status != 200 {
		t.Errorf("/health: %d", got.status)
	}
}

// TestResultStoreBucketAtStart: credentials the bucket refuses stop thumbd
// at start, naming the setting; a bucket that does not answer is a
// warning, and thumbd serves by computing.
func TestResultStoreBucketAtStart(t *testing.T) {
	srv, env := s3Store(t, encodeJPEG(t, scene(400, 300), 90))
	env["AWS_SECRET_ACCESS_KEY"] = "wrong-secret"
	logs := &launch.Log{}
	child, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
		Env: append(envList(env), "THUMBD_TEST_MAIN=1"), Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Stop(0) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code, err := child.Wait(ctx); err != nil || code == 0 || !strings.Contains(logs.String(), "THUMBD_RESULT_STORE=s3://results/thumbs/") || !strings.Contains(logs.String(), "credentials") {
		t.Fatalf("wrong secret: exit %d, %v; logs:\n%s", code, err, logs)
	}

	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env["AWS_ENDPOINT_URL_S3"] = fmt.Sprintf("http://127.0.0.1:%d", port) // nothing listens
	c := startChild(t, envList(env)...)
	if a := get(t, c.addr+"/thumbnail?src=photo.jpg&w=64"); a.status != 200 {
		t.Fatalf("store unreachable: %d %s", a.status, a.body)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(c.logs.String(), "result store: not answering at start"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no start-up warning; logs:\n%s", c.logs)
		}
	}
}

// TestResultStoreWithBucketSources: sources and results in buckets of one
// S3 server (one set of AWS variables); a bucket object's thumbnails are
// named by its bucket and key, stored under that tag, and answered by
// another instance from the store (its identity, the object's ETag, still
// asked by a HEAD) with no engine job.
func TestResultStoreWithBucketSources(t *testing.T) {
	srv, env := s3Store(t, encodeJPEG(t, scene(400, 300), 90))
	ctx := context.Background()
	if err := srv.MakeBucket(ctx, "images"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Put(ctx, "images", "originals/cat.jpg", encodeJPEG(t, scene(640, 480), 90)); err != nil {
		t.Fatal(err)
	}
	delete(env, "THUMBD_SOURCE_DIR")
	env["THUMBD_SOURCE"] = "s3://images/originals"
	a, da := storeServer(t, storeConfig(t, "", env))
	path := "/thumbnail?src=cat.jpg&w=128&format=webp"
	made := get(t, a+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	if tag := resultstore.Tag("s3\x00images\x00originals/cat.jpg"); made.header.Get("Surrogate-Key") != tag {
		t.Errorf("Surrogate-Key %q, want %s", made.header.Get("Surrogate-Key"), tag)
	}
	waitWrites(t, da, 1)
	b, db := storeServer(t, storeConfig(t, "", env))
	sameStoredAnswer(t, "from the store", made, get(t, b+path))
	if jobs := engineJobs(t, db); jobs != 0 {
		t.Errorf("%d engine jobs, want 0", jobs)
	}
}

// TestResultStoreBucketSigned: with THUMBD_RESULT_STORE_KEY, an object
// signed by one instance is answered by another through S3's metadata
// (names lower-cased, values as written).
func TestResultStoreBucketSigned(t *testing.T) {
	_, env := s3Store(t, encodeJPEG(t, scene(400, 300), 90))
	env["THUMBD_RESULT_STORE_KEY"] = strings.Repeat("ab", 16)
	a, da := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	path := "/thumbnail?src=photo.jpg&w=64&format=webp"
	made := get(t, a+path)
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)
	b, db := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	sameStoredAnswer(t, "signed, from the bucket", made, get(t, b+path))
	if n := metricSum(t, db, "thumbd_result_store_hits_total"); n != 1 {
		t.Errorf("%g hits, want 1 (rejected %g)", n, metricSum(t, db, "thumbd_result_store_rejected_total"))
	}
}
