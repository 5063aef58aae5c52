package source

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
)

func code(err error) apierr.Code {
	if err == nil {
		return ""
	}
	return apierr.From(err).Code
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestUpload(t *testing.T) {
	budget := admission.NewBytes(25)
	limits := Limits{MaxBytes: 10, Budget: budget, IDs: NewIDHash(nil)}
	ctx := context.Background()

	blob, err := Upload{Limits: limits, Body: strings.NewReader("0123456789"), Length: 10}.Read(ctx)
	if err != nil || string(blob.Bytes) != "0123456789" || blob.ID != limits.Sum([]byte("0123456789")) || budget.Used() != 10 {
		t.Fatalf("exactly the limit: %v %+v used %d", err, blob, budget.Used())
	}
	for name, u := range map[string]Upload{
		"declared too large": {Limits: limits, Body: strings.NewReader(""), Length: 11},
		"longer than said":   {Limits: limits, Body: strings.NewReader("0123456789a"), Length: 3},
		"length unknown":     {Limits: limits, Body: strings.NewReader("0123456789ab"), Length: -1},
	} {
		_, err := u.Read(ctx)
		if e := apierr.From(err); e.Code != apierr.BodyTooLarge || !e.CloseConnection {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := (Upload{Limits: limits, Body: failingReader{}, Length: -1}).Read(ctx); code(err) != apierr.BadParameter {
		t.Errorf("broken body: %v", err)
	}
	// 10 held, 15 left: a second 10 fits, a third does not.
	second, err := Upload{Limits: limits, Body: strings.NewReader("abcdefghij"), Length: -1}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Upload{Limits: limits, Body: strings.NewReader("ABCDEFGHIJ"), Length: -1}).Read(ctx); code(err) != apierr.QueueFull {
		t.Errorf("past the budget: %v", err)
	}
	if budget.Used() != 20 {
		t.Errorf("a refused read kept %d bytes", budget.Used()-20)
	}
	blob.Release()
	second.Release()
	second.Release() // twice is harmless
	if budget.Used() != 0 {
		t.Errorf("used %d after release", budget.Used())
	}
}

func TestDirFile(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "src")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "a.jpg"), []byte("abc"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.jpg"), make([]byte, 11), 0o644)
	os.WriteFile(filepath.Join(parent, "secret.jpg"), []byte("x"), 0o644)
	os.Symlink(parent, filepath.Join(dir, "up"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	budget := admission.NewBytes(100)
	d := &Dir{Limits: Limits{MaxBytes: 10, Budget: budget}, Root: root}
	blob, err := d.File("sub/a.jpg").Read(context.Background())
	if err != nil || string(blob.Bytes) != "abc" {
		t.Fatalf("%v %+v", err, blob)
	}
	blob.Release()
	for name, want := range map[string]apierr.Code{
		"": apierr.BadSourceName, "../secret.jpg": apierr.BadSourceName, "/etc/passwd": apierr.BadSourceName,
		`sub\a.jpg`: apierr.BadSourceName, "up/secret.jpg": apierr.BadSourceName, "nope.jpg": apierr.SourceNotFound,
		"sub": apierr.SourceNotFound, "fifo": apierr.SourceNotFound, "big.jpg": apierr.SourceTooLarge,
	} {
		if _, err := d.File(name).Read(context.Background()); code(err) != want {
			t.Errorf("%q: %v, want %s", name, err, want)
		}
	}
	if budget.Used() != 0 {
		t.Errorf("budget used %d", budget.Used())
	}
}

// An upload of known length waits, unread, for the budget (up to Wait),
// then is read once room is given back; past Wait it is refused with a
// 503, having read nothing.
func TestUploadWaitsForTheBudget(t *testing.T) {
	budget := admission.NewBytes(10)
	limits := Limits{MaxBytes: 10, Budget: budget, Wait: 5 * time.Second, IDs: NewIDHash(nil)}
	ctx := context.Background()
	first, err := Upload{Limits: limits, Body: strings.NewReader("0123456789"), Length: 10}.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	body := &countingReader{r: strings.NewReader("abcdefghij")}
	done := make(chan error)
	go func() {
		blob, err := Upload{Limits: limits, Body: body, Length: 10}.Read(ctx)
		if err == nil && string(blob.Bytes) != "abcdefghij" {
			err = errors.New("wrong bytes: " + string(blob.Bytes))
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if body.n.Load() != 0 {
		t.Fatal("a waiting upload was read before it had room")
	}
	first.Release()
	if err := <-done; err != nil {
		t.Fatalf("after room was given back: %v", err)
	}
	// Wait passes: refused unread.
	limits.Wait = 30 * time.Millisecond
	late := &countingReader{r: strings.NewReader("ABCDEFGHIJ")}
	if _, err := (Upload{Limits: limits, Body: late, Length: 10}).Read(ctx); code(err) != apierr.QueueFull || late.n.Load() != 0 {
		t.Fatalf("past Wait: %v, %d bytes read", err, late.n.Load())
	}
	// The request's own end (deadline, client gone) is its error, not a 503.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (Upload{Limits: limits, Body: strings.NewReader("x"), Length: 10}).Read(gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("client gone while waiting: %v", err)
	}
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// sizes records the buffer each Read is given.
type sizes struct {
	r    io.Reader
	seen []int
}

func (s *sizes) Read(p []byte) (int, error) {
	s.seen = append(s.seen, len(p))
	return s.r.Read(p)
}

// A source is read (and hashed, when it is) a turn at a time, so that a
// goroutine reading one whose bytes are all in the socket's buffer (or the
// page cache) yields its processor (to a probe) at least every turn bytes
// instead of every 10 ms.
func TestSourceReadATurnAtATime(t *testing.T) {
	const size = 3 << 20
	for _, id := range []string{Hashed, "src\x00a.tif\x00v1"} {
		body := &sizes{r: strings.NewReader(strings.Repeat("x", size))}
		limits := Limits{MaxBytes: size, Budget: admission.NewBytes(size), Wait: time.Second, IDs: NewIDHash(nil)}
		blob, err := limits.ReadSized(context.Background(), body, size, id, func() error { return errors.New("too large") })
		if err != nil {
			t.Fatal(err)
		}
		blob.Release()
		if len(blob.Bytes) != size {
			t.Fatalf("%q: read %d bytes", id, len(blob.Bytes))
		}
		for _, n := range body.seen {
			if n > turn {
				t.Fatalf("%q: a read of up to %d bytes in one go (reads: %v); want at most %d", id, n, body.seen, turn)
			}
		}
		if len(body.seen) < size/turn {
			t.Fatalf("%q: %d reads for %d bytes", id, len(body.seen), size)
		}
	}
}

// A source waiting for its bytes holds no hashing token: with one token,
// an upload whose client stalls does not stop another from being read;
// and a token is held while a turn is hashed, no more at once than given.
func TestHashersAreNotHeldWhileWaitingForBytes(t *testing.T) {
	const size = 1 << 20
	limits := Limits{MaxBytes: size, Budget: admission.NewBytes(2 * size), Wait: time.Second, Hashers: NewHashers(1), IDs: NewIDHash(nil)}
	stalled, w := io.Pipe()
	defer w.Close()
	go func() {
		w.Write([]byte("first bytes")) // then nothing: a stalled client
	}()
	go limits.Read(stalled, Hashed, func() error { return errors.New("too large") })
	time.Sleep(50 * time.Millisecond) // the stalled upload is waiting for bytes
	done := make(chan error, 1)
	data := strings.Repeat("y", size)
	go func() {
		blob, err := limits.ReadSized(context.Background(), strings.NewReader(data), size, Hashed, func() error { return errors.New("too large") })
		if err == nil {
			if blob.ID != limits.Sum([]byte(data)) {
				err = errors.New("wrong hash " + blob.ID)
			}
			blob.Release()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled upload held the only hashing token")
	}
	if len(limits.Hashers) != 0 {
		t.Fatalf("%d tokens held after the reads", len(limits.Hashers))
	}
}

// DefaultCacheControl says MaxAge.
func TestDefaultCacheControlIsMaxAge(t *testing.T) {
	if want := "public, max-age=" + strconv.Itoa(int(MaxAge/time.Second)); DefaultCacheControl != want {
		t.Errorf("%q, want %q", DefaultCacheControl, want)
	}
}

// THUMBD_TTL sets the lifetime of an answer whose source has no rules and
// bounds an origin's; THUMBD_STALE_WHILE_REVALIDATE adds its directive to
// a cacheable answer, never to no-store or no-cache.
func TestCacheControlTTL(t *testing.T) {
	now := time.Unix(1000, 0)
	ttl := TTL{MaxAge: time.Hour, StaleWhileRevalidate: 10 * time.Minute}
	for _, c := range []struct {
		f    Freshness
		t    TTL
		want string
	}{
		{Freshness{}, TTL{}, DefaultCacheControl},
		{Freshness{}, ttl, "public, max-age=3600, stale-while-revalidate=600"},
		{Freshness{Origin: true, AnswerUntil: now.Add(2 * time.Hour)}, ttl, "public, max-age=3600, stale-while-revalidate=600"},
		{Freshness{Origin: true, Private: true, AnswerUntil: now.Add(time.Minute)}, ttl, "private, max-age=60, stale-while-revalidate=600"},
		{Freshness{Origin: true, AnswerUntil: now}, ttl, "public, no-cache"},
		{Freshness{Origin: true, NoStore: true}, ttl, "no-store"},
	} {
		if got := c.f.CacheControl(now, c.t); got != c.want {
			t.Errorf("%+v with %+v: %q, want %q", c.f, c.t, got, c.want)
		}
	}
}
