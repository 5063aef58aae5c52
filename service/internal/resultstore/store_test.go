package resultstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thumbd/thumbd/internal/launch"

	"github.com/thumbd/thumbd/service/internal/bucket"
	"github.com/thumbd/thumbd/service/internal/results"
	"github.com/thumbd/thumbd/service/internal/source"
)

// stalled is a backend that answers like its Dir until stalled, then
// hangs every call until the call's context ends (a store stopped with
// SIGSTOP, a network that drops packets).
type stalled struct {
	Dir
	stall      atomic.Bool
	gets, puts atomic.Int64
	release    chan struct{} // closed: stalled Puts return (nil: they wait for their context)
}

func (b *stalled) Get(ctx context.Context, key string, lim Limits) (Object, error) {
	b.gets.Add(1)
	if b.stall.Load() {
		<-ctx.Done()
		return Object{}, ctx.Err()
	}
	return b.Dir.Get(ctx, key, lim)
}

func (b *stalled) Put(ctx context.Context, key string, o Object) error {
	b.puts.Add(1)
	if b.stall.Load() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.release:
		}
	}
	return b.Dir.Put(ctx, key, o)
}

func testConfig(b Backend) Config {
	return Config{Backend: b, LookupTimeout: 100 * time.Millisecond, WriteTimeout: 5 * time.Second, QueueBytes: 1 << 20, MaxBytes: 1 << 20,
		BreakerFailures: 3, BreakerDelay: 300 * time.Millisecond}
}

func entry(body string, fresh source.Freshness) *results.Entry {
	return &results.Entry{Body: webp(body), Type: "image/webp", ETag: `"` + body + `"`, Fresh: fresh}
}

// webp is body behind a WebP file's signature: what the store accepts
// as image/webp (only the signature is checked).
func webp(body string) []byte { return []byte("RIFF\x00\x00\x00\x00WEBP" + body) }

var forever = source.Freshness{Store: true, Until: time.Unix(1<<62, 0)}

// flush waits for s's queue to drain.
func flush(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.QueuedBytes() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still queued after 5 s", s.QueuedBytes())
		}
	}
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := New(testConfig(Dir{Root: t.TempDir()}))
	defer s.Close(ctx)
	origin := source.Freshness{Store: true, Until: time.Now().Add(time.Hour).Truncate(time.Second), ETag: `"v1"`, LastModified: "Wed, 02 Dec 2026 00:00:00 GMT"}
	want := entry("webp bytes", origin)
	tag := Tag("url\x00https://example.com/a.jpg")
	if _, ok := s.Get(ctx, tag, "k"); ok {
		t.Fatal("hit before any write")
	}
	s.Put(ctx, tag, "k", want, []string{"Accept"})
	flush(t, s)
	got, ok := s.Get(ctx, tag, "k")
	if !ok {
		t.Fatal("miss after the write")
	}
	if !bytes.Equal(got.Body, want.Body) || got.ETag != want.ETag || got.Type != want.Type || got.Fresh != want.Fresh {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if n := testutil.ToFloat64(s.metrics.hits); n != 1 {
		t.Errorf("hits %g, want 1", n)
	}
	if n := testutil.ToFloat64(s.metrics.misses); n != 1 {
		t.Errorf("misses %g, want 1", n)
	}
	if n := testutil.ToFloat64(s.metrics.writes); n != 1 {
		t.Errorf("writes %g, want 1", n)
	}
}

func TestStoreKeepsOnlyWhatMayBeKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s := New(testConfig(Dir{Root: root}))
	defer s.Close(ctx)
	s.Put(ctx, "aa", "no-store", entry("x", source.Freshness{Store: false}), nil)
	s.Put(ctx, "aa", "304", &results.Entry{ETag: `"x"`, Fresh: forever}, nil) // a 304's entry: no image
	s.Put(ctx, "aa", "large", entry(strings.Repeat("x", 1<<20), forever), nil)
	s.Put(ctx, "aa", "control byte", entry("x", source.Freshness{Store: true, ETag: "\x01"}), nil)
	flush(t, s)
	if files, _ := filepath.Glob(filepath.Join(root, "*", "*")); len(files) != 0 {
		t.Fatalf("stored %v, want nothing", files)
	}
	for reason, want := range map[string]float64{"too_large": 1, "unstorable": 1, "queue_full": 0} {
		if n := testutil.ToFloat64(s.metrics.dropped.WithLabelValues(reason)); n != want {
			t.Errorf("dropped %s: %g, want %g", reason, n, want)
		}
	}
}

func TestStoreOff(t *testing.T) {
	s := New(Config{})
	s.Put(context.Background(), "aa", "k", entry("x", forever), nil)
	if _, ok := s.Get(context.Background(), "aa", "k"); ok || s.On() {
		t.Fatal("a store without a backend answered")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.Collectors()...)
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Fatalf("metrics of a store that is off: %d, %v; want every series at 0", n, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStoreLayout: one source's thumbnails are one prefix, its tag, so
// deleting the prefix forgets them and only them.
func TestStoreLayout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s := New(testConfig(Dir{Root: root}))
	defer s.Close(ctx)
	cat, dog := Tag("src\x00cat.jpg"), Tag("src\x00dog.jpg")
	if len(cat) != 16 || cat == dog {
		t.Fatalf("tags %q %q: want 16 hex digits each, distinct", cat, dog)
	}
	for _, k := range []string{"w=100", "w=200"} {
		s.Put(ctx, cat, "src\x00cat.jpg\x00v1\x00"+k, entry("cat"+k, forever), nil)
		s.Put(ctx, dog, "src\x00dog.jpg\x00v1\x00"+k, entry("dog"+k, forever), nil)
	}
	flush(t, s)
	if files, _ := filepath.Glob(filepath.Join(root, cat, "*")); len(files) != 2 {
		t.Fatalf("under %s: %v, want the 2 thumbnails of cat.jpg", cat, files)
	}
	if err := os.RemoveAll(filepath.Join(root, cat)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"w=100", "w=200"} {
		if _, ok := s.Get(ctx, cat, "src\x00cat.jpg\x00v1\x00"+k); ok {
			t.Errorf("cat %s still served after its prefix was deleted", k)
		}
		if _, ok := s.Get(ctx, dog, "src\x00dog.jpg\x00v1\x00"+k); !ok {
			t.Errorf("dog %s lost with cat's prefix", k)
		}
	}
}

// TestStoreWritesNeverWait: Put returns at once with the backend hanging;
// past the queue's bound, writes are dropped and counted.
func TestStoreWritesNeverWait(t *testing.T) {
	ctx := context.Background()
	b := &stalled{Dir: Dir{Root: t.TempDir()}, release: make(chan struct{})}
	b.stall.Store(true)
	cfg := testConfig(b)
	one, _ := encode(entry(strings.Repeat("x", 1000), forever), nil)
	cfg.QueueBytes = 10 * writeSize(ObjectKey("aa", "k"), one)
	s := New(cfg)
	start := time.Now()
	for i := range 50 {
		s.Put(ctx, "aa", strings.Repeat("k", i+1), entry(strings.Repeat("x", 1000), forever), nil)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("50 Puts with the store hanging took %s", d)
	}
	if q := s.QueuedBytes(); q > cfg.QueueBytes {
		t.Errorf("queued %d bytes, over the %d bound", q, cfg.QueueBytes)
	}
	// 2 writers hold one write each; 10 more fit the queue's bytes.
	dropped := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("queue_full"))
	if dropped < 50-12-writers || dropped > 50-10 {
		t.Errorf("dropped %g of 50 writes with room for about 10-12", dropped)
	}
	close(b.release)
	flush(t, s)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(s.metrics.writes); n+dropped != 50 {
		t.Errorf("%g written and %g dropped, want 50 in all", n, dropped)
	}
}

// TestStoreStalled: a store that stops answering costs each lookup at
// most the lookup timeout, then none once the breaker is open; after the
// delay one lookup tries it again, and a store that answers is used again.
func TestStoreStalled(t *testing.T) {
	ctx := context.Background()
	b := &stalled{Dir: Dir{Root: t.TempDir()}}
	cfg := testConfig(b)
	s := New(cfg)
	defer s.Close(ctx)
	s.Put(ctx, "aa", "k", entry("x", forever), nil)
	flush(t, s)
	b.stall.Store(true)
	for i := range 10 {
		start := time.Now()
		if _, ok := s.Get(ctx, "aa", "k"); ok {
			t.Fatal("a hit from a stalled store")
		}
		// Bounds with room for a loaded machine's scheduling: what they
		// catch is a lookup waiting for the store (the backend here
		// never answers) rather than for its timeout.
		d := time.Since(start)
		if d > cfg.LookupTimeout+250*time.Millisecond {
			t.Errorf("lookup %d took %s, over the %s timeout", i, d, cfg.LookupTimeout)
		}
		if i >= int(cfg.BreakerFailures) && d > 50*time.Millisecond {
			t.Errorf("lookup %d took %s with the breaker open", i, d)
		}
	}
	if n := b.gets.Load(); n != int64(cfg.BreakerFailures) {
		t.Errorf("the stalled store was asked %d times, want %d (then the breaker opens)", n, cfg.BreakerFailures)
	}
	if n := testutil.ToFloat64(s.metrics.skipped); n != 10-float64(cfg.BreakerFailures) {
		t.Errorf("skipped %g lookups", n)
	}
	// While open, writes are dropped at once, not queued behind the stall.
	s.Put(ctx, "aa", "k2", entry("y", forever), nil)
	if n := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("store_down")); n != 1 {
		t.Errorf("dropped store_down %g, want 1", n)
	}
	b.stall.Store(false)
	time.Sleep(cfg.BreakerDelay + 50*time.Millisecond)
	if _, ok := s.Get(ctx, "aa", "k"); !ok {
		t.Fatal("no hit once the store answers again and the delay passed")
	}
	if _, ok := s.Get(ctx, "aa", "k"); !ok || s.breaker.IsOpen() {
		t.Fatal("the breaker did not close after a successful trial")
	}
}

// TestStoreMixedWrite: an object whose body is not the one its metadata
// describes (one write's metadata beside another's body) is a miss, never
// an answer with the wrong ETag.
func TestStoreMixedWrite(t *testing.T) {
	ctx := context.Background()
	d := Dir{Root: t.TempDir()}
	s := New(testConfig(d))
	defer s.Close(ctx)
	s.Put(ctx, "aa", "k", entry("first", forever), nil)
	flush(t, s)
	key := ObjectKey("aa", "k")
	o, err := d.Get(ctx, key, Limits{Max: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	o.Body = webp("other")
	if err := d.Put(ctx, key, o); err != nil {
		t.Fatal(err)
	}
	if e, ok := s.Get(ctx, "aa", "k"); ok {
		t.Fatalf("answered %q with the ETag %s of another body", e.Body, e.ETag)
	}
	if n := testutil.ToFloat64(s.metrics.lookupErrors); n != 1 {
		t.Errorf("lookup errors %g, want 1", n)
	}
}

// TestBucketUnreachableIsNotRefused: a bucket that does not answer at
// start-up is a store that may come back (a warning), not a refusal.
func TestBucketUnreachableIsNotRefused(t *testing.T) {
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	b := bucketBackend(t, []string{"AWS_ENDPOINT_URL_S3=http://127.0.0.1:" + fmt.Sprint(port), "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s"}, "s3://results")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var r *RefusedError
	if err := b.Check(ctx); err == nil || errors.As(err, &r) {
		t.Fatalf("Check of a closed port: %v, want an error that is not a refusal", err)
	}
}

// CheckAtStart: off passes; a missing directory is a refusal naming the
// setting; a bucket that does not answer is a warning, not an error.
func TestCheckAtStart(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	if err := Open(Settings{Logger: logger}).CheckAtStart(ctx); err != nil {
		t.Errorf("off: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	s := Open(Settings{Location: Location{Dir: missing}, LookupTimeout: time.Second, QueueBytes: 1 << 20, MaxBytes: 1 << 20, Logger: logger})
	defer s.Close(ctx)
	var refused *RefusedError
	if err := s.CheckAtStart(ctx); !errors.As(err, &refused) || !strings.Contains(err.Error(), "THUMBD_RESULT_STORE="+missing) {
		t.Errorf("a missing directory: %v", err)
	}
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := bucket.FromEnv(func(k string) string {
		return map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:" + fmt.Sprint(port), "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	s = Open(Settings{Location: Location{Bucket: &bucket.Location{Bucket: "results"}}, Conn: conn, LookupTimeout: time.Second, QueueBytes: 1 << 20, MaxBytes: 1 << 20, Logger: logger})
	defer s.Close(ctx)
	if err := s.CheckAtStart(ctx); err != nil || !strings.Contains(logs.String(), "result store: not answering at start") || !strings.Contains(logs.String(), "s3://results/") {
		t.Errorf("a closed port: %v\n%s", err, logs.String())
	}
}

// keyPath is where the directory store at root keeps key of tag.
func keyPath(root, tag, key string) string {
	return filepath.Join(root, filepath.FromSlash(ObjectKey(tag, key)))
}

// fifoInPlace replaces the file at path with a FIFO: opening it for
// reading blocks until a writer comes, as a frozen NFS mount blocks; the
// cleanup opens it for writing, so that the blocked opens return.
func fifoInPlace(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// TestStoreHungFileSystem (finding 3): a directory store whose file system
// hangs (a FIFO in place of a result) costs each lookup its timeout, not
// more, and opens the breaker, whatever the file system does.
func TestStoreHungFileSystem(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cfg := testConfig(Dir{Root: root})
	s := New(cfg)
	defer s.Close(ctx)
	s.Put(ctx, "aa", "k", entry("x", forever), nil)
	flush(t, s)
	fifoInPlace(t, keyPath(root, "aa", "k"))
	for i := range int(cfg.BreakerFailures) + 2 {
		start := time.Now()
		done := make(chan bool, 1)
		go func() { _, ok := s.Get(ctx, "aa", "k"); done <- ok }()
		select {
		case ok := <-done:
			if ok {
				t.Fatal("a hit from a FIFO")
			}
		case <-time.After(cfg.LookupTimeout + 2*time.Second):
			t.Fatalf("lookup %d still waiting for the file system %s later (timeout %s)", i, time.Since(start), cfg.LookupTimeout)
		}
		if d := time.Since(start); d > cfg.LookupTimeout+250*time.Millisecond {
			t.Errorf("lookup %d took %s, over the %s timeout", i, d, cfg.LookupTimeout)
		}
	}
	if n := testutil.ToFloat64(s.metrics.opened); n != 1 {
		t.Errorf("breaker opened %g times, want 1", n)
	}
}

// TestStoreLookupsInFlightBounded (finding 4): lookups past the bound (64
// by default) are misses at once, without asking the store, while the
// others wait for a slow one.
func TestStoreLookupsInFlightBounded(t *testing.T) {
	ctx := context.Background()
	b := &stalled{Dir: Dir{Root: t.TempDir()}}
	b.stall.Store(true)
	cfg := testConfig(b)
	cfg.LookupTimeout, cfg.BreakerFailures = 500*time.Millisecond, 1000
	s := New(cfg)
	defer s.Close(ctx)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() { s.Get(ctx, "aa", fmt.Sprint(i)) })
	}
	for deadline := time.Now().Add(5 * time.Second); b.gets.Load() < 64; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d lookups reached the store", b.gets.Load())
		}
	}
	start := time.Now()
	if _, ok := s.Get(ctx, "aa", "one more"); ok {
		t.Fatal("a hit")
	}
	if d := time.Since(start); d > 100*time.Millisecond || b.gets.Load() != 64 {
		t.Errorf("the 65th lookup took %s and the store was asked %d times, want at once and 64", d, b.gets.Load())
	}
	wg.Wait()
}

// TestStoreMetadataEveryBackendTakes (finding 6): metadata over S3's 2 KB
// (two origin validators of 1000 bytes each) is never written, so no PUT
// fails on it; a header JSON makes long (700 '<' in an ETag, 4200 bytes
// escaped) is read back by the directory store that wrote it.
func TestStoreMetadataEveryBackendTakes(t *testing.T) {
	ctx := context.Background()
	s := New(testConfig(Dir{Root: t.TempDir()}))
	defer s.Close(ctx)
	long := source.Freshness{Store: true, Until: time.Unix(1<<62, 0), ETag: `"` + strings.Repeat("a", 998) + `"`, LastModified: strings.Repeat("b", 1000)}
	s.Put(ctx, "aa", "over 2 KB", entry("x", long), nil)
	flush(t, s)
	if n := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("unstorable")); n != 1 {
		t.Errorf("metadata over 2 KB: %g dropped as unstorable, want 1", n)
	}
	escaped := source.Freshness{Store: true, Until: time.Unix(1<<62, 0), ETag: `"` + strings.Repeat("<", 700) + `"`}
	s.Put(ctx, "aa", "escaped", entry("y", escaped), nil)
	flush(t, s)
	if _, ok := s.Get(ctx, "aa", "escaped"); !ok {
		t.Errorf("a result the store wrote is not read back (lookup errors %g)", testutil.ToFloat64(s.metrics.lookupErrors))
	}
}

// TestStoreQueueCountsMetadata (Info): a queued write counts the metadata
// it carries (up to 2 KB), not a fixed 512 bytes: a queue bounded to a
// body and 512 bytes does not take a write whose metadata is 2 KB.
func TestStoreQueueCountsMetadata(t *testing.T) {
	ctx := context.Background()
	b := &stalled{Dir: Dir{Root: t.TempDir()}, release: make(chan struct{})}
	b.stall.Store(true)
	cfg := testConfig(b)
	e := entry("x", source.Freshness{Store: true, Until: time.Unix(1<<62, 0), ETag: `"` + strings.Repeat("a", 900) + `"`, LastModified: strings.Repeat("b", 900)})
	cfg.QueueBytes = int64(len(e.Body)) + 512
	s := New(cfg)
	s.Put(ctx, "aa", "k", e, nil)
	if n := testutil.ToFloat64(s.metrics.dropped.WithLabelValues("queue_full")); n != 1 {
		t.Errorf("a write with %d bytes of metadata in a queue of its body and 512 bytes: %g dropped, want 1", 1800, n)
	}
	close(b.release)
	s.Close(ctx)
}
