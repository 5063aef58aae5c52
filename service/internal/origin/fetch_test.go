package origin

import (
	"context"
	"hash"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/source"
)

// Fetched bytes come out of the byte budget every source shares: a fetch
// that would go past it is a 503, and what it took is given back.
func TestFetchReadsThroughTheBudget(t *testing.T) {
	body := strings.Repeat("x", 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("User-Agent") != "thumbd/test" || r.Header.Get("Accept") != "image/png" || r.Header.Get("Accept-Encoding") != "" {
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	patterns, err := ParsePatterns("http://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	budget := admission.NewBytes(150)
	var codes []apierr.Code
	f := New(Config{Patterns: patterns, AllowLoopback: true, FetchTimeout: 5 * time.Second, UserAgent: "thumbd/test", Accept: "image/png",
		Observe: func(_ time.Duration, _ int, code apierr.Code) { codes = append(codes, code) }},
		source.Limits{MaxBytes: 100, Budget: budget, IDs: source.NewIDHash(nil)})
	src, err := f.Source(srv.URL + "/a")
	if err != nil {
		t.Fatal(err)
	}
	held, err := src.Read(context.Background())
	if err != nil || string(held.Bytes) != body || budget.Used() != 100 {
		t.Fatalf("%v, %d used", err, budget.Used())
	}
	if _, err := src.Read(context.Background()); apierr.From(err).Code != apierr.QueueFull {
		t.Fatalf("past the budget: %v", err)
	}
	held.Release()
	if budget.Used() != 0 {
		t.Fatalf("%d bytes still held", budget.Used())
	}
	if len(codes) != 2 || codes[0] != "" || codes[1] != apierr.QueueFull {
		t.Errorf("observed %q", codes)
	}
	// A request that ends (here: its client left) ends the fetch with it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := src.Read(ctx); err != context.Canceled {
		t.Errorf("cancelled: %v", err)
	}
	if codes[len(codes)-1] != apierr.ClientGone {
		t.Errorf("observed %q", codes)
	}
}

// An origin's image is identified by its validators, not hashed: its URL
// and strong ETag, which the origin changes whenever the bytes change;
// else its URL, Last-Modified and length (said or not). With a weak ETag
// (the same for bytes that differ) alone, or no validator, its bytes'
// keyed hash is its identity.
func TestOriginImageIdentity(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if etag := q.Get("etag"); etag != "" {
			w.Header().Set("ETag", etag)
		}
		if lm := q.Get("lm"); lm != "" {
			w.Header().Set("Last-Modified", lm)
		}
		body := []byte("image " + r.URL.RawQuery)
		if q.Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.Write(body)
		if q.Get("chunked") != "" {
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	patterns, err := ParsePatterns("http://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	var hashes atomic.Int32
	ids := source.NewIDHash(nil)
	limits := source.Limits{MaxBytes: 100, Budget: admission.NewBytes(100), IDs: func() hash.Hash { hashes.Add(1); return ids() }}
	f := New(Config{Patterns: patterns, AllowLoopback: true, FetchTimeout: 5 * time.Second}, limits)
	const lm = "Mon, 02 Jan 2026 15:04:05 GMT"
	for _, c := range []struct {
		query, want string // want: after the URL; "" hashed
	}{
		{"etag=%22v1%22", "etag:\"v1\""},
		{"etag=%22v1%22&lm=" + url.QueryEscape(lm), "etag:\"v1\""},
		{"etag=W/%22v1%22&lm=" + url.QueryEscape(lm), "modified:" + lm + "\x00size:SIZE"},
		{"lm=" + url.QueryEscape(lm), "modified:" + lm + "\x00size:SIZE"},
		{"chunked=1&lm=" + url.QueryEscape(lm), "modified:" + lm + "\x00size:SIZE"},
		{"etag=W/%22v1%22", ""},
		{"", ""},
		{"chunked=1", ""},
	} {
		src, err := f.Source(srv.URL + "/a?" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		before := hashes.Load()
		blob, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		hashed := hashes.Load() > before
		want := src.Key() + "\x00" + strings.Replace(c.want, "SIZE", strconv.Itoa(len(blob.Bytes)), 1)
		if c.want == "" {
			want = limits.Sum(blob.Bytes)
		}
		blob.Release()
		if blob.ID != want || hashed != (c.want == "") {
			t.Errorf("%s: identity %q, want %q; hashed %v", c.query, blob.ID, want, hashed)
		}
	}
}

// Every connection the client makes, for the first URL, a redirect or a
// reconnect, goes through the guarded dialer: the transport has no proxy
// and no other dial function, and its dialer refuses a loopback address
// with the switch off before connecting (the listener is never reached).
func TestEveryConnectionIsGuarded(t *testing.T) {
	f := New(Config{}, source.Limits{})
	tr := f.client.Transport.(*http.Transport)
	if tr.Proxy != nil || tr.Dial != nil || tr.DialTLS != nil || tr.DialTLSContext != nil || tr.DialContext == nil || f.client.CheckRedirect == nil {
		t.Fatal("the transport has a way to connect around the guarded dialer")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String()); code(err) != apierr.OriginAddressBlocked {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dialing loopback with the switch off: %v", err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("the listener was connected to")
	}
}

// Fetches from one origin host share at most MaxConnsPerHost connections:
// a burst of url= requests naming one origin does not open a connection
// per request (thumbd as an amplifier). The others wait for one, within
// the fetch timeout, and are then served.
func TestConnectionsPerHostAreCapped(t *testing.T) {
	const limit, fetches = 2, 6
	var open, most atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write([]byte("image"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			n := open.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	patterns, err := ParsePatterns("http://" + strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	f := New(Config{Patterns: patterns, AllowLoopback: true, FetchTimeout: 10 * time.Second, IdleConns: fetches, MaxConnsPerHost: limit},
		source.Limits{MaxBytes: 100, Budget: admission.NewBytes(1000), IDs: source.NewIDHash(nil)})
	errs := make(chan error, fetches)
	for range fetches {
		go func() {
			src, err := f.Source(srv.URL + "/a")
			if err == nil {
				var blob *source.Blob
				if blob, err = src.Read(context.Background()); err == nil {
					blob.Release()
				}
			}
			errs <- err
		}()
	}
	time.Sleep(300 * time.Millisecond) // every fetch has asked for a connection
	close(release)
	for range fetches {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := most.Load(); n > limit {
		t.Errorf("%d connections open at once to one host, want at most %d", n, limit)
	}
}
