package main

import (
	"context"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/s3test"
)

// Issue 39: the trust review of the result store and bucket sources. Each
// test here failed before its fix.

// unsized is a proxy in front of s that answers every GET without
// Content-Length (chunked), as a gateway that serves objects decompressed
// does; the Host header is kept, so that the signatures still match.
func unsized(t *testing.T, s *s3test.Server) string {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Request.Method == http.MethodGet && resp.StatusCode == http.StatusOK {
				resp.Header.Del("Content-Length")
				resp.ContentLength = -1
			}
			return nil
		},
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A bucket GET without Content-Length (finding 7) is read as an upload of
// unknown length is, within the budget and the limit: a source, a stored
// result, and an object over the limit, refused.
func TestBucketGetWithoutContentLength(t *testing.T) {
	src := encodeJPEG(t, scene(200, 100), 90)
	s := imagesBucket(t, src)
	if err := s.MakeBucket(context.Background(), "results"); err != nil {
		t.Fatal(err)
	}
	over := map[string]string{"AWS_ENDPOINT_URL_S3": unsized(t, s)}
	cfg := bucketConfig(t, s, "s3://images/orig", over)
	cfg.MaxBodyBytes = int64(3 * len(src))
	srv, _ := newTestServer(t, cfg)
	status, h, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "image/") {
		t.Fatalf("a source without Content-Length: %d %s", status, body)
	}
	if _, err := s.Put(context.Background(), "images", "orig/big.jpg", make([]byte, cfg.MaxBodyBytes+1)); err != nil {
		t.Fatal(err)
	}
	getError(t, srv.URL+"/thumbnail?src=big.jpg", 422, "source_too_large")

	// The result store read through the same gateway: its hits are hits.
	env := s.Vars(over)
	env["THUMBD_SOURCE"] = "s3://images/orig"
	env["THUMBD_RESULT_STORE"] = "s3://results/thumbs"
	a, da := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	made := get(t, a+"/thumbnail?src=a.jpg&w=60")
	if made.status != 200 {
		t.Fatalf("%d %s", made.status, made.body)
	}
	waitWrites(t, da, 1)
	b, db := storeServer(t, storeConfig(t, "s3://results/thumbs", env))
	sameStoredAnswer(t, "a stored result without Content-Length", made, get(t, b+"/thumbnail?src=a.jpg&w=60"))
	if hits := metricSum(t, db, "thumbd_result_store_hits_total"); hits != 1 {
		t.Errorf("%g store hits, want 1", hits)
	}
}

// storedFiles are the results a directory store holds (temporary files,
// whose names start with a dot, aside).
func storedFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A directory store on a hung file system (finding 3; FIFOs in place of
// stored results: opening one waits for a writer) costs each request the
// lookup timeout, never its deadline, and opens the store's breaker.
func TestResultStoreHungDirectory(t *testing.T) {
	photo := encodeJPEG(t, scene(400, 300), 90)
	_, store, env := storeFixture(t, photo)
	env["THUMBD_RESULT_STORE_TIMEOUT"] = "100ms"
	env["THUMBD_DEADLINE"] = "5s"
	a, da := storeServer(t, storeConfig(t, store, env))
	const n = 7 // the breaker opens after 5 failures
	path := func(i int) string { return "/thumbnail?src=photo.jpg&format=webp&w=" + strconv.Itoa(40+i) }
	for i := range n {
		if made := get(t, a+path(i)); made.status != 200 {
			t.Fatalf("%d %s", made.status, made.body)
		}
	}
	waitWrites(t, da, n)
	files := storedFiles(t, store)
	if len(files) != n {
		t.Fatalf("stored %d files, want %d", len(files), n)
	}
	for _, f := range files {
		os.Remove(f)
		if err := syscall.Mkfifo(f, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // the opens still blocked return
			if w, err := os.OpenFile(f, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		})
	}
	// At once, as under load: the lookups fail before any write (which
	// replaces a FIFO by a file) answers for the store's health.
	b, db := storeServer(t, storeConfig(t, store, env))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			if got := get(t, b+path(i)); got.status != 200 {
				t.Errorf("request %d over the hung store: %d %s after %s", i, got.status, got.body, time.Since(start))
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("request %d took %s over a store whose timeout is 100ms", i, d)
			}
		})
	}
	wg.Wait()
	if got := metricSum(t, db, "thumbd_result_store_breaker_opened_total"); got != 1 {
		t.Errorf("breaker opened %g times, want 1", got)
	}
	if got := get(t, b+path(n)); got.status != 200 {
		t.Fatalf("%d %s", got.status, got.body)
	}
	if got := metricSum(t, db, "thumbd_result_store_lookups_skipped_total"); got != 1 {
		t.Errorf("%g lookups skipped with the breaker open, want 1", got)
	}
}
