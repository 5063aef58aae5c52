package bucketsource

import (
	"context"
	"hash"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/s3test"
	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/source"
)

type fixture struct {
	s       *s3test.Server
	b       *Bucket
	budget  *admission.Bytes
	reg     *prometheus.Registry
	metrics *bucket.Metrics
	hashes  atomic.Int64 // sources hashed: none, an object's identity is its version
}

// setup serves bucket "images" with orig/a.jpg ("abc"), orig/big.jpg (11
// bytes, over the limit of 10) and secret.jpg outside the prefix.
func setup(t *testing.T, cfg Config) *fixture {
	t.Helper()
	s := s3test.ForTest(t)
	ctx := context.Background()
	if err := s.MakeBucket(ctx, "images"); err != nil {
		t.Fatal(err)
	}
	for key, body := range map[string]string{"orig/a.jpg": "abc", "orig/big.jpg": "0123456789a", "secret.jpg": "s"} {
		if _, err := s.Put(ctx, "images", key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	vars := s.Vars(nil)
	conn, err := bucket.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{s: s, budget: admission.NewBytes(100), reg: prometheus.NewRegistry()}
	f.metrics = bucket.NewMetrics(f.reg)
	client, err := bucket.New(bucket.Location{Bucket: "images", Prefix: "orig/"}, conn, bucket.Options{Use: "source", Metrics: f.metrics})
	if err != nil {
		t.Fatal(err)
	}
	ids := source.NewIDHash(nil)
	f.b = New(client, source.Limits{MaxBytes: 10, Budget: f.budget, Wait: time.Second,
		IDs: func() hash.Hash { f.hashes.Add(1); return ids() }}, cfg)
	return f
}

// calls is how many calls of op the bucket was asked.
func (f *fixture) calls(t *testing.T, op string) int {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "thumbd_bucket_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

func (f *fixture) read(t *testing.T, name string) (source.Keyed, *source.Blob, error) {
	t.Helper()
	ctx := context.Background()
	pending, err := f.b.Object(name)
	if err != nil {
		return nil, nil, err
	}
	keyed, err := pending.Identify(ctx)
	if err != nil {
		return nil, nil, err
	}
	blob, err := keyed.Read(ctx)
	return keyed, blob, err
}

func code(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.From(err).Code
}

func TestSources(t *testing.T) {
	f := setup(t, Config{})
	keyed, blob, err := f.read(t, "a.jpg")
	if err != nil || string(blob.Bytes) != "abc" || keyed.Key() == "" || !blob.Fresh.Store {
		t.Fatalf("found: %v %+v", err, blob)
	}
	// Its identity is the version read, as its key's: its bytes are not
	// hashed.
	if blob.ID != keyed.Key() || f.hashes.Load() != 0 {
		t.Errorf("identity %q, want the key %q; %d hashes", blob.ID, keyed.Key(), f.hashes.Load())
	}
	blob.Release()
	if _, _, err := f.read(t, "nope.jpg"); code(err) != apierr.SourceNotFound || !strings.Contains(err.Error(), `"nope.jpg"`) {
		t.Errorf("missing: %v", err)
	}
	// Over the limit: refused from the HEAD's size, its bytes never asked for.
	gets := f.calls(t, "get")
	if _, _, err := f.read(t, "big.jpg"); code(err) != apierr.SourceTooLarge || f.calls(t, "get") != gets {
		t.Errorf("too large: %v, %d gets", err, f.calls(t, "get")-gets)
	}
	// Names refused before any call.
	heads := f.calls(t, "stat")
	for _, name := range []string{"", "../secret.jpg", "/a.jpg", "a/../../secret.jpg", "./a.jpg", "a//b.jpg", "a.jpg/", "a\x00.jpg",
		"a\n.jpg", `..\secret.jpg`, strings.Repeat("n", bucket.MaxKey-len("orig/")+1)} {
		if _, _, err := f.read(t, name); code(err) != apierr.BadSourceName {
			t.Errorf("%q: %v", name, err)
		}
	}
	if f.calls(t, "stat") != heads {
		t.Errorf("refused names cost %d calls", f.calls(t, "stat")-heads)
	}
	if f.budget.Used() != 0 {
		t.Errorf("budget used %d", f.budget.Used())
	}
}

// A replaced object has a new identity and new bytes; so has a file
// placed beside the server, which it serves with no ETag (identified by
// size and modification time).
func TestReplacedObject(t *testing.T) {
	f := setup(t, Config{})
	first, blob, err := f.read(t, "a.jpg")
	if err != nil {
		t.Fatal(err)
	}
	blob.Release()
	if _, err := f.s.Put(context.Background(), "images", "orig/a.jpg", []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	second, blob, err := f.read(t, "a.jpg")
	if err != nil || string(blob.Bytes) != "xyz" || second.Key() == first.Key() {
		t.Fatalf("replaced: %v %q, key changed %v", err, blob.Bytes, second.Key() != first.Key())
	}
	type named interface{ Identity() string }
	if a, b := first.(named).Identity(), second.(named).Identity(); a != b || a != "s3\x00images\x00orig/a.jpg" {
		t.Errorf("identity without the version: %q, %q", a, b)
	}
	blob.Release()

	if err := f.s.Place("images", "orig/placed.jpg", []byte("one")); err != nil {
		t.Fatal(err)
	}
	placed, blob, err := f.read(t, "placed.jpg")
	if err != nil || string(blob.Bytes) != "one" || !strings.Contains(placed.Key(), "size:3") || !blob.Fresh.Store || blob.ID != placed.Key() {
		t.Fatalf("placed by hand: %v %+v %q", err, blob, placed.Key())
	}
	blob.Release()
	// The same size, rewritten a second later (Last-Modified counts whole
	// seconds: a same-size rewrite within the second keeps the identity).
	time.Sleep(1100 * time.Millisecond)
	if err := f.s.Place("images", "orig/placed.jpg", []byte("two")); err != nil {
		t.Fatal(err)
	}
	again, blob, err := f.read(t, "placed.jpg")
	if err != nil || string(blob.Bytes) != "two" || again.Key() == placed.Key() || blob.ID != again.Key() {
		t.Fatalf("placed again: %v %q", err, blob.Bytes)
	}
	blob.Release()
	if f.hashes.Load() != 0 {
		t.Errorf("%d objects hashed", f.hashes.Load())
	}
}

// With a MaxAge the identity is asked once within it: a replaced object
// keeps its old key that long, but a read still gets the new bytes, and
// its thumbnail is not kept under the old key.
func TestMaxAge(t *testing.T) {
	f := setup(t, Config{MaxAge: time.Hour})
	first, blob, err := f.read(t, "a.jpg")
	if err != nil {
		t.Fatal(err)
	}
	blob.Release()
	if _, err := f.s.Put(context.Background(), "images", "orig/a.jpg", []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	second, blob, err := f.read(t, "a.jpg")
	if err != nil || second.Key() != first.Key() || f.calls(t, "stat") != 1 {
		t.Fatalf("within MaxAge: %v, same key %v, %d HEADs", err, second.Key() == first.Key(), f.calls(t, "stat"))
	}
	if string(blob.Bytes) != "xyz" || blob.Fresh.Store {
		t.Errorf("read under the old identity: %q, kept %v", blob.Bytes, blob.Fresh.Store)
	}
	// Its bytes' identity (the ETag's) is the version read, not the one
	// the key names.
	if blob.ID == first.Key() || !strings.HasPrefix(blob.ID, "s3\x00images\x00orig/a.jpg\x00etag:") {
		t.Errorf("read under the old identity: ID %q (the key's %q)", blob.ID, first.Key())
	}
	blob.Release()
	// The changed read forgot the identity: the next request asks again.
	third, blob, err := f.read(t, "a.jpg")
	if err != nil || third.Key() == first.Key() || !blob.Fresh.Store {
		t.Fatalf("after the change was seen: %v", err)
	}
	blob.Release()
}

// Bucket failures reach the source as their codes.
func TestBucketFailures(t *testing.T) {
	f := setup(t, Config{})
	f.s.Kill()
	if _, _, err := f.read(t, "a.jpg"); code(err) != apierr.BucketUnreachable {
		t.Errorf("killed: %v", err)
	}
}

// waitFor waits up to 5 s for log to hold s.
func waitFor(t *testing.T, log *launch.Log, s string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(log.String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the log has no %q:\n%s", s, log.String())
		}
	}
}

// CheckAtStart: no bucket and a reachable one send nothing; a missing
// bucket is an error naming the setting; an unreachable one a warning.
func TestCheckAtStart(t *testing.T) {
	ctx := context.Background()
	log := &launch.Log{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	var none *Bucket
	f := setup(t, Config{})
	vars := f.s.Vars(nil)
	conn, err := bucket.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	client, err := bucket.New(bucket.Location{Bucket: "absent"}, conn, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	absent := New(client, source.Limits{}, Config{})
	failed := absent.CheckAtStart(ctx, 5*time.Second, logger)
	if err := <-failed; err == nil || !strings.Contains(err.Error(), "THUMBD_SOURCE=s3://absent/: The bucket does not exist") {
		t.Errorf("a missing bucket: %v", err)
	}
	for _, b := range []*Bucket{none, f.b} {
		if b == f.b {
			defer waitFor(t, log, "source bucket: reachable")
		}
		select {
		case err := <-b.CheckAtStart(ctx, 5*time.Second, logger):
			t.Errorf("%v: %v", b, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
	f.s.Kill()
	select {
	case err := <-f.b.CheckAtStart(ctx, 5*time.Second, logger):
		t.Errorf("killed: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	waitFor(t, log, "source bucket: not reachable at start-up")
}

// An object's bytes are identified by the version the GET answered with
// (its ETag, else its size and Last-Modified), as its key is; an answer
// naming no version (neither an ETag nor a Last-Modified) is hashed.
func TestObjectIdentity(t *testing.T) {
	client, err := bucket.New(bucket.Location{Bucket: "images", Prefix: "orig/"}, bucket.Conn{Endpoint: "http://127.0.0.1:9"}, bucket.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := &object{b: New(client, source.Limits{}, Config{}), name: "a.jpg"}
	when := time.Unix(1700000000, 0)
	for _, c := range []struct {
		obj  bucket.Object
		want string
	}{
		{bucket.Object{Size: 3, ETag: "abc"}, "s3\x00images\x00orig/a.jpg\x00etag:abc"},
		{bucket.Object{Size: 3, LastModified: when}, "s3\x00images\x00orig/a.jpg\x00size:3\x00" + strconv.FormatInt(when.UnixNano(), 10)},
		{bucket.Object{Size: 3}, source.Hashed},
	} {
		if got := o.identity(c.obj); got != c.want {
			t.Errorf("%+v: %q, want %q", c.obj, got, c.want)
		}
	}
}
