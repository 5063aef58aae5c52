package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

// bucketConfig is a test configuration reading sources from s at loc.
func bucketConfig(t *testing.T, s *s3test.Server, loc string, over map[string]string) config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Source = loc
	env := s.Vars(over)
	if errs := cfg.sourceStore(func(k string) string { return env[k] }); len(errs) > 0 {
		t.Fatal(errs)
	}
	return cfg
}

// imagesBucket serves bucket "images" with orig/a.jpg.
func imagesBucket(t *testing.T, src []byte) *s3test.Server {
	t.Helper()
	s := s3test.ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "images"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "images", "orig/a.jpg", src); err != nil {
		t.Fatal(err)
	}
	return s
}

// GET /thumbnail?src= from a bucket answers as from a directory: the same
// thumbnail as the bytes uploaded, under an ETag of the object's version;
// each failure its code.
func TestBucketSource(t *testing.T) {
	src := encodeJPEG(t, scene(200, 100), 90)
	s := imagesBucket(t, src)
	cfg := bucketConfig(t, s, "s3://images/orig", nil)
	cfg.MaxBodyBytes = int64(3 * len(src))
	cfg.CacheSize = 16 << 20
	srv, _ := newTestServer(t, cfg)

	_, hp, bp := postThumb(t, srv.URL, "?w=50", src)
	status, h, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil)
	if status != 200 || h.Get("ETag") == "" || hp.Get("ETag") == "" || !bytes.Equal(body, bp) {
		t.Fatalf("found: status %d, ETag %s (upload's %s)", status, h.Get("ETag"), hp.Get("ETag"))
	}
	if status, _, _ := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil, "If-None-Match", h.Get("ETag")); status != 304 {
		t.Errorf("If-None-Match: %d", status)
	}
	if status, _, body := do(t, "GET", srv.URL+"/info?src=a.jpg", nil); status != 200 || !bytes.Contains(body, []byte(`"width":200`)) {
		t.Errorf("/info: %d %s", status, body)
	}
	getError(t, srv.URL+"/thumbnail?src=nope.jpg", 404, apierr.SourceNotFound)
	for _, name := range []string{"../secret.jpg", "%2Fa.jpg", "a%00.jpg", "x/../a.jpg", "a%0A.jpg"} {
		getError(t, srv.URL+"/thumbnail?src="+name, 400, apierr.BadSourceName)
	}
	ctx := context.Background()
	if _, err := s.Put(ctx, "images", "orig/big.jpg", make([]byte, cfg.MaxBodyBytes+1)); err != nil {
		t.Fatal(err)
	}
	getError(t, srv.URL+"/thumbnail?src=big.jpg", 422, apierr.SourceTooLarge)

	// Replaced: the next request has the new image, under a new ETag,
	// though the old thumbnail is in the result cache.
	other := encodeJPEG(t, scene(100, 200), 90)
	if _, err := s.Put(ctx, "images", "orig/a.jpg", other); err != nil {
		t.Fatal(err)
	}
	_, _, bn := postThumb(t, srv.URL, "?w=50", other)
	status, h2, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil)
	if status != 200 || h2.Get("ETag") == h.Get("ETag") || !bytes.Equal(body, bn) {
		t.Fatalf("replaced: status %d, ETag %s, old %s", status, h2.Get("ETag"), h.Get("ETag"))
	}
	if status, _, _ := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=50", nil, "If-None-Match", h.Get("ETag")); status != 200 {
		t.Errorf("If-None-Match of the replaced object's thumbnail: %d", status)
	}
}

// The operator's bucket failing is a 5xx with its own code, and the
// bucket's own words stay out of the answer.
func TestBucketSourceFailures(t *testing.T) {
	src := encodeJPEG(t, scene(200, 100), 90)
	s := imagesBucket(t, src)
	denied, _ := newTestServer(t, bucketConfig(t, s, "s3://images/orig", map[string]string{"AWS_SECRET_ACCESS_KEY": "wrong"}))
	status, _, body := do(t, "GET", denied.URL+"/thumbnail?src=a.jpg", nil)
	if status != 502 || bytes.Contains(bytes.ToLower(body), []byte("signature")) {
		t.Errorf("wrong secret: %d %s", status, body)
	}
	assertError(t, body, apierr.BucketDenied)
	missing, _ := newTestServer(t, bucketConfig(t, s, "s3://nobucket", nil))
	getError(t, missing.URL+"/thumbnail?src=a.jpg", 502, apierr.BucketNotFound)

	// Stopped: every request ends by its deadline, none hangs.
	cfg := bucketConfig(t, s, "s3://images/orig", nil)
	cfg.Deadline = time.Second
	srv, _ := newTestServer(t, cfg)
	if status, _, body := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg", nil); status != 200 {
		t.Fatalf("before the pause: %d %s", status, body)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, _ = do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w="+strconv.Itoa(10*(i+1)), nil)
		}()
	}
	wg.Wait()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("paused bucket: requests took %s, past their 1s deadline", took)
	}
	for _, c := range codes {
		if c != 504 {
			t.Errorf("paused bucket: %v, want 504s", codes)
			break
		}
	}
	s.Resume()
	s.Kill()
	getError(t, srv.URL+"/thumbnail?src=a.jpg", 502, apierr.BucketUnreachable)
}

// A bucket that refuses the credentials, or does not exist, stops start-up
// naming THUMBD_SOURCE. (thumbd runs as a child: a whole run in this
// process would stop the tests' shared libvips.)
func TestBucketSourceStartUp(t *testing.T) {
	s := imagesBucket(t, []byte("x"))
	for name, over := range map[string]map[string]string{
		"wrong secret":   {"THUMBD_SOURCE": "s3://images", "AWS_SECRET_ACCESS_KEY": "wrong"},
		"missing bucket": {"THUMBD_SOURCE": "s3://nobucket"},
	} {
		env := append(s3test.List(s.Vars(over)), "THUMBD_TEST_MAIN=1")
		logs := &launch.Log{}
		srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]}, Env: env, Stderr: logs})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		code, err := srv.Wait(ctx)
		cancel()
		if err != nil || code != 1 || !strings.Contains(logs.String(), "THUMBD_SOURCE=s3://") {
			srv.Stop(0)
			t.Errorf("%s: exit %d, %v\n%s", name, code, err, logs)
		}
	}
}

// An unreachable bucket at start-up is a warning: thumbd serves, and src=
// answers bucket_unreachable until the bucket is back.
func TestBucketSourceUnreachableAtStartUp(t *testing.T) {
	s := imagesBucket(t, encodeJPEG(t, scene(200, 100), 90))
	s.Kill()
	c := startChild(t, s3test.List(s.Vars(map[string]string{"THUMBD_SOURCE": "s3://images/orig"}))...)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.logs.String(), "source bucket: not reachable") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(c.logs.String(), `"code":"bucket_unreachable"`) {
		t.Fatalf("no warning:\n%s", c.logs)
	}
	getError(t, c.addr+"/thumbnail?src=a.jpg", 502, apierr.BucketUnreachable)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if status, _, body := do(t, "GET", c.addr+"/thumbnail?src=a.jpg", nil); status != 200 {
		t.Fatalf("the bucket back: %d %s", status, body)
	}
}
