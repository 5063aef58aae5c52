package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// listenDeferred is listenWith on a socket that hands over a connection
// once its first bytes have come, as thumbd's is.
func listenDeferred(t *testing.T, cfg Config) capped {
	t.Helper()
	return listenOn(t, net.ListenConfig{Control: DeferAccept}, cfg)
}

// At the cap, with connections waiting for a place, a probe on a new
// connection is answered at once in the reserve, for one request only;
// a probe's path with a body, and any other path, wait as before, and are
// served in their turn.
func TestProbeServedPastTheCap(t *testing.T) {
	l := listenDeferred(t, Config{Max: 1, IdleBound: 50 * time.Millisecond, Probes: []string{"/health"}})
	release := make(chan struct{})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, r.URL.Path)
	}))
	busy := dial(t, l)
	io.WriteString(busy, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	waitCap(t, l)
	var waiting []net.Conn
	for i, head := range []string{
		"GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		c := dial(t, l)
		io.WriteString(c, head)
		waiting = append(waiting, c)
		for end := time.Now().Add(5 * time.Second); l.Waiting() != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d connections waiting, want %d", l.Waiting(), i+1)
			}
		}
	}
	probe := dial(t, l)
	start := time.Now()
	probe.SetDeadline(start.Add(5 * time.Second))
	io.WriteString(probe, "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(probe)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the probe, after %s: %v", time.Since(start), err)
	}
	body, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); took > time.Second || string(body) != "/health" || !resp.Close {
		t.Fatalf("the probe: %q after %s, Connection: close %v; want /health within 1 s, and its connection closed", body, took, resp.Close)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the probe's answer: %q, %v; want the connection's end (one request only)", rest, err)
	}
	if n, open := l.Probed(), l.Open(); n != 1 || open != 1 {
		t.Fatalf("probes %d, open %d; want 1 and 1", n, open)
	}
	for _, c := range waiting {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !isTimeout(err) {
			t.Fatalf("a connection waiting for a place was answered: %v", err)
		}
	}
	close(release)
	for i, want := range []string{"/a", "/health", "/healthz"} {
		waiting[i].SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(waiting[i]), nil)
		if err != nil {
			t.Fatalf("waiting connection %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != want {
			t.Fatalf("waiting connection %d: %q, want %q", i, body, want)
		}
	}
}

// A probe's head: a whole head, GET or HEAD, a probe's path, no body.
func TestProbeHead(t *testing.T) {
	paths := []string{"/health", "/ready"}
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"HEAD /ready?verbose=1 HTTP/1.0\r\n\r\n", true},
		{"GET /health HTTP/1.1\r\nHost: x\r\ncontent-length: 0\r\n\r\n", true},
		{"GET /health HTTP/1.1\r\nHost: x\r\n", false},               // not whole
		{"POST /health HTTP/1.1\r\nHost: x\r\n\r\n", false},          // a method with a body
		{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", false},          // another path
		{"GET http://x/health HTTP/1.1\r\nHost: x\r\n\r\n", false},   // absolute form
		{"GET /health HTTP/1.1\r\nContent-Length: 5\r\n\r\n", false}, // a body
		{"GET /health HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"GET /health PRI/2\r\n\r\n", false},
	} {
		if got := probeHead([]byte(tc.head), paths); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.head, got, tc.want)
		}
	}
}

// Without probe paths there is no reserve: the probe waits with the rest.
func TestNoReserveWithoutProbes(t *testing.T) {
	l := listenDeferred(t, Config{Max: 1})
	release := make(chan struct{})
	defer close(release)
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	io.WriteString(dial(t, l), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	waitCap(t, l)
	probe := dial(t, l)
	probe.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	fmt.Fprint(probe, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := probe.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the probe: %v; want it waiting", err)
	}
	if n := l.Probed(); n != 0 {
		t.Fatalf("probes %d", n)
	}
}
