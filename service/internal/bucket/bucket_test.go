package bucket

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

func TestParseURL(t *testing.T) {
	for raw, want := range map[string]Location{
		"s3://images":           {Bucket: "images"},
		"s3://images/":          {Bucket: "images"},
		"s3://images/a/b":       {Bucket: "images", Prefix: "a/b/"},
		"s3://images/a/b/":      {Bucket: "images", Prefix: "a/b/"},
		"s3://my.images-2/orig": {Bucket: "my.images-2", Prefix: "orig/"},
	} {
		got, err := ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "images", "/data", "s3:/images", "https://images", "s3://", "s3://ab", "s3://Images",
		"s3://-images", "s3://images-", "s3://im..ages", "s3://im_ages", "s3://images/a//b", "s3://images/a/../b", "s3://images/a\x00"} {
		if loc, err := ParseURL(raw); err == nil {
			t.Errorf("%q: accepted as %+v", raw, loc)
		}
	}
}

func TestValidKey(t *testing.T) {
	for _, key := range []string{"a.jpg", "a/b.jpg", "a b/ü.jpg", "..a", "a..b", "a.", strings.Repeat("k", MaxKey)} {
		if !ValidKey(key) {
			t.Errorf("%q refused", key)
		}
	}
	for _, key := range []string{"", "/a.jpg", "a//b", "a/", "..", "../a", "a/../b", "a/..", "./a", "a/./b",
		"a\x00b", "a\nb", "a\x7fb", `a\b`, strings.Repeat("k", MaxKey+1)} {
		if ValidKey(key) {
			t.Errorf("%q accepted", key)
		}
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"AWS_ENDPOINT_URL": "http://other:1", "AWS_ENDPOINT_URL_S3": "https://s3.example:9000/",
		"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_DEFAULT_REGION": "eu-west-3"}))
	if err != nil || c.Endpoint != "https://s3.example:9000/" || c.Region != "eu-west-3" || c.AccessKeyID != "k" {
		t.Fatalf("%+v %v", c, err)
	}
	host, secure, _, err := c.endpoint()
	if err != nil || host != "s3.example:9000" || !secure {
		t.Fatalf("endpoint %s %v %v", host, secure, err)
	}
	if c, _ := FromEnv(env(nil)); c.Region != DefaultRegion || c.Endpoint != "" {
		t.Errorf("defaults: %+v", c)
	}
	for name, vars := range map[string]map[string]string{
		"key without secret":   {"AWS_ACCESS_KEY_ID": "k"},
		"secret without key":   {"AWS_SECRET_ACCESS_KEY": "s"},
		"role without token":   {"AWS_ROLE_ARN": "arn:aws:iam::1:role/r"},
		"endpoint with a path": {"AWS_ENDPOINT_URL_S3": "http://h:1/bucket"},
		"endpoint no scheme":   {"AWS_ENDPOINT_URL_S3": "h:9000"},
		"endpoint ftp":         {"AWS_ENDPOINT_URL": "ftp://h"},
	} {
		if _, err := FromEnv(env(vars)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Location{Bucket: "abc"}, Conn{Addressing: "sideways"}, Options{}); err == nil {
		t.Error("an unknown addressing style was accepted")
	}
}

// server starts versitygw with a bucket "images" holding a.jpg.
func server(t *testing.T) *s3test.Server {
	t.Helper()
	s := s3test.ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "images"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "images", "orig/a.jpg", []byte("abc")); err != nil {
		t.Fatal(err)
	}
	return s
}

func client(t *testing.T, s *s3test.Server, loc string, vars map[string]string, opts Options) *Client {
	t.Helper()
	conn, err := FromEnv(env(s.Vars(vars)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseURL(loc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(l, conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func code(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return errorCode(err)
}

// Against a real S3 server: objects under the prefix found, read, written
// with their metadata; each failure answered with its code, the server's
// words kept only as the cause; and every call counted.
func TestClient(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	c := client(t, s, "s3://images/orig", nil, Options{Use: "source", Metrics: metrics})
	if err := c.Check(ctx); err != nil {
		t.Fatal(err)
	}
	obj, err := c.Stat(ctx, "a.jpg")
	if err != nil || obj.Size != 3 || obj.ETag == "" || obj.LastModified.IsZero() || obj.Key != "a.jpg" {
		t.Fatalf("stat: %+v %v", obj, err)
	}
	r, err := c.Get(ctx, "a.jpg", GetOptions{IfMatch: obj.ETag})
	if err != nil || r.Size != 3 || r.ETag != obj.ETag {
		t.Fatalf("get: %+v %v", r, err)
	}
	if b, err := io.ReadAll(r); err != nil || string(b) != "abc" {
		t.Fatalf("body %q %v", b, err)
	}
	r.Close()
	r.Close() // twice is harmless

	meta := map[string]string{"Thumbd-Etag": `"x"`, "Thumbd-Vary": "Accept"}
	if err := c.Put(ctx, "out/t.webp", []byte("webp"), "image/webp", meta); err != nil {
		t.Fatal(err)
	}
	put, err := c.Stat(ctx, "out/t.webp")
	if err != nil || put.ContentType != "image/webp" || put.Metadata["Thumbd-Etag"] != `"x"` || put.Metadata["Thumbd-Vary"] != "Accept" {
		t.Fatalf("put then stat: %+v %v", put, err)
	}
	if _, err := s.Put(ctx, "images", "orig/a.jpg", []byte("abcd")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "a.jpg", GetOptions{IfMatch: obj.ETag}); !errors.Is(err, ErrChanged) {
		t.Fatalf("a replaced object's old ETag: %v", err)
	}
	if err := c.Delete(ctx, "out/t.webp"); err != nil {
		t.Fatal(err)
	}

	if _, err := c.Stat(ctx, "nope.jpg"); code(err) != apierr.SourceNotFound || !NotFound(err) {
		t.Errorf("stat of a missing object: %v", err)
	}
	if _, err := c.Get(ctx, "nope.jpg", GetOptions{}); code(err) != apierr.SourceNotFound {
		t.Errorf("get of a missing object: %v", err)
	}
	// The objects outside the prefix are not reached by a key.
	if _, err := c.Stat(ctx, "orig/a.jpg"); code(err) != apierr.SourceNotFound {
		t.Errorf("orig/ under the orig/ prefix: %v", err)
	}

	missing := client(t, s, "s3://nobucket", nil, Options{Use: "source", Metrics: metrics})
	for name, err := range map[string]error{"check": missing.Check(ctx), "stat": second(missing.Stat(ctx, "a.jpg")), "get": second(missing.Get(ctx, "a.jpg", GetOptions{}))} {
		if code(err) != apierr.BucketNotFound {
			t.Errorf("missing bucket, %s: %v", name, err)
		}
	}
	denied := client(t, s, "s3://images", map[string]string{"AWS_SECRET_ACCESS_KEY": "wrong"}, Options{Use: "source", Metrics: metrics})
	for name, err := range map[string]error{"check": denied.Check(ctx), "stat": second(denied.Stat(ctx, "orig/a.jpg")), "get": second(denied.Get(ctx, "orig/a.jpg", GetOptions{}))} {
		e := apierr.From(err)
		if e.Code != apierr.BucketDenied || e.Status() < 500 || strings.Contains(e.Message, "signature") {
			t.Errorf("wrong secret, %s: %v", name, err)
		}
	}
	if e := apierr.From(second(denied.Get(ctx, "orig/a.jpg", GetOptions{}))); e.Cause == nil || !strings.Contains(e.Cause.Error(), "s3://images/") {
		t.Errorf("the cause logged does not name the bucket: %v", e.Cause)
	}

	if got := testutil.ToFloat64(metrics.errors.WithLabelValues("source", "get", "bucket_denied")); got != 2 {
		t.Errorf("denied gets counted %v, want 2", got)
	}
	if got := testutil.ToFloat64(metrics.bytes.WithLabelValues("source", "get")); got != 3 {
		t.Errorf("bytes read counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(metrics.bytes.WithLabelValues("source", "put")); got != 4 {
		t.Errorf("bytes written counted %v, want 4", got)
	}
}

func second[T any](_ T, err error) error { return err }

// A server stopped (SIGSTOP) costs a call its attempt's timeout, or the
// caller's deadline when that comes first, and nothing more; a server
// killed is unreachable at once.
func TestServerStoppedAndKilled(t *testing.T) {
	s := server(t)
	ctx := context.Background()
	c := client(t, s, "s3://images/orig", nil, Options{Timeout: 300 * time.Millisecond})
	if _, err := c.Stat(ctx, "a.jpg"); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.Stat(ctx, "a.jpg")
	if took := time.Since(start); code(err) != apierr.BucketTimeout || took > 2*time.Second {
		t.Errorf("paused: %v after %s, want bucket_timeout after 300ms", err, took)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	start = time.Now()
	_, err = c.Get(short, "a.jpg", GetOptions{})
	cancel()
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Errorf("paused, within the caller's deadline: %v after %s", err, took)
	}
	s.Resume()
	if _, err := c.Stat(ctx, "a.jpg"); err != nil {
		t.Fatalf("resumed: %v", err)
	}
	s.Kill()
	start = time.Now()
	_, err = c.Stat(ctx, "a.jpg")
	if took := time.Since(start); code(err) != apierr.BucketUnreachable || took > 2*time.Second {
		t.Errorf("killed: %v after %s", err, took)
	}
	if err := c.Check(ctx); code(err) != apierr.BucketUnreachable {
		t.Errorf("killed, check: %v", err)
	}
}

// Reads are retried after a failure that may pass, a bounded number of
// times and never past the caller's deadline; writes are not retried.
func TestRetries(t *testing.T) {
	var calls atomic.Int32
	fails := int32(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= fails {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", "0")
	}))
	defer srv.Close()
	conn := Conn{Endpoint: srv.URL, Region: DefaultRegion, AccessKeyID: "k", SecretAccessKey: "s"}
	c, err := New(Location{Bucket: "images"}, conn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Stat(ctx, "a.jpg"); err != nil || calls.Load() != 3 {
		t.Fatalf("two 503s then a 200: %v after %d calls", err, calls.Load())
	}
	calls.Store(0)
	fails = 10
	if _, err := c.Stat(ctx, "a.jpg"); code(err) != apierr.BucketError || calls.Load() != 1+DefaultRetries {
		t.Errorf("503s: %v after %d calls, want %d", err, calls.Load(), 1+DefaultRetries)
	}
	calls.Store(0)
	short, cancel := context.WithTimeout(ctx, 40*time.Millisecond) // under twice the first backoff (25-50 ms)
	defer cancel()
	if _, err := c.Stat(short, "a.jpg"); code(err) != apierr.BucketError || calls.Load() != 1 {
		t.Errorf("no retry past the deadline: %v after %d calls", err, calls.Load())
	}
	calls.Store(0)
	if err := c.Put(ctx, "a.jpg", []byte("x"), "image/jpeg", nil); code(err) != apierr.BucketError || calls.Load() != 1 {
		t.Errorf("put: %v after %d calls, want 1", err, calls.Load())
	}
}
