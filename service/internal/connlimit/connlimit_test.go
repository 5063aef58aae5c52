package connlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// capped is a loopback socket under a limiter.
type capped struct {
	net.Listener
	*Limiter
}

func listen(t *testing.T, limit int, idleBound time.Duration) capped {
	t.Helper()
	return listenWith(t, Config{Max: limit, IdleBound: idleBound})
}

func listenRefusing(t *testing.T, limit int, idleBound time.Duration, refusal []byte) capped {
	t.Helper()
	return listenWith(t, Config{Max: limit, IdleBound: idleBound, Refusal: refusal, RefusePastCap: true})
}

// listenWith is a limiter of cfg on a socket of every address
// (127.0.0.2 reaches it too).
func listenWith(t *testing.T, cfg Config) capped {
	t.Helper()
	return listenOn(t, net.ListenConfig{}, cfg)
}

// listenOn is listenWith with the socket made by lc.
func listenOn(t *testing.T, lc net.ListenConfig, cfg Config) capped {
	t.Helper()
	inner, err := lc.Listen(t.Context(), "tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(cfg)
	ln := l.Listen(inner)
	t.Cleanup(func() { ln.Close() })
	return capped{ln, l}
}

func dial(t *testing.T, l capped) net.Conn {
	t.Helper()
	return dialFrom(t, l, "127.0.0.1")
}

// dialFrom connects to l from the loopback address from.
func dialFrom(t *testing.T, l capped, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// acceptAll accepts in a goroutine, as http.Server does, and hands over
// each connection.
func acceptAll(l capped) <-chan net.Conn {
	out := make(chan net.Conn, 16)
	go func() {
		defer close(out)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			out <- c
		}
	}()
	return out
}

// At the cap, a further connection is not handed to the server (it
// waits, held by the listener) until one closes; the time at the cap is
// counted.
func TestAcceptWaitsAtTheCap(t *testing.T) {
	l := listen(t, 2, time.Hour)
	accepted := acceptAll(l)
	var server []net.Conn
	for range 3 {
		dial(t, l)
	}
	for range 2 {
		select {
		case c := <-accepted:
			server = append(server, c)
		case <-time.After(5 * time.Second):
			t.Fatal("the first two connections were not accepted")
		}
	}
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted past a cap of 2")
	case <-time.After(100 * time.Millisecond):
	}
	if n := l.Open(); n != 2 {
		t.Fatalf("open %d, want 2", n)
	}
	if d := l.AtCap(); d < 50*time.Millisecond {
		t.Fatalf("at the cap for %s, want the 100 ms the third waited at least", d)
	}
	server[0].Close()
	server[0].Close() // a second Close gives nothing back twice
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the third connection was not accepted once one closed")
	}
	if n := l.Open(); n != 2 {
		t.Fatalf("open %d after one closed and one was accepted, want 2", n)
	}
}

// With a refusal, a connection past the cap is sent it and closed at once,
// and counted; the connections under the cap are untouched, and a place
// that frees takes the next connection again.
func TestRefusalPastTheCap(t *testing.T) {
	refusal := []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	l := listenRefusing(t, 1, time.Hour, refusal)
	accepted := acceptAll(l)
	dial(t, l)
	var held net.Conn
	select {
	case held = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the first connection was not accepted")
	}
	for i := range 3 {
		c := dial(t, l)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("connection %d past the cap: %v after %q", i, err, got)
		}
		if string(got) != string(refusal) {
			t.Fatalf("connection %d past the cap read %q, want the refusal", i, got)
		}
	}
	if n, open := l.Refused(), l.Open(); n != 3 || open != 1 {
		t.Fatalf("refused %d, open %d; want 3 and 1", n, open)
	}
	select {
	case <-accepted:
		t.Fatal("a refused connection was handed to the server")
	default:
	}
	held.Close()
	dial(t, l)
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("a connection was not accepted once the place freed")
	}
	if n := l.Refused(); n != 3 {
		t.Fatalf("refused %d after a place freed, want still 3", n)
	}
}

// Past maxRefusing refusals being answered at once, a further connection
// past the cap waits, unanswered but not closed, until one of them ends;
// then it gets its refusal too: the refusals' goroutines stay bounded
// however many connections arrive, and none is closed without an answer.
func TestRefusalsBoundedPastTheirLimit(t *testing.T) {
	refusal := []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	l := listenRefusing(t, 1, time.Hour, refusal)
	l.lingerFor = time.Minute // each answered refusal holds its place until its client closes
	accepted := acceptAll(l)
	dial(t, l)
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the first connection was not accepted")
	}
	ask := func() net.Conn {
		c := dial(t, l)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var answered []net.Conn
	for i := range maxRefusing {
		c := ask()
		got := make([]byte, len(refusal))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != string(refusal) {
			t.Fatalf("refusal %d: read %q, %v", i, got, err)
		}
		answered = append(answered, c)
	}
	c := ask()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if got, err := c.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("past %d refusals at once: read %d bytes, %v; want it still waiting", maxRefusing, got, err)
	}
	answered[0].Close() // that refusal ends: a goroutine is free
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != string(refusal) {
		t.Fatalf("once a refusal ended: read %q, %v; want the refusal", got, err)
	}
	if n := l.Refused(); n != maxRefusing+1 {
		t.Fatalf("refused %d, want %d", n, maxRefusing+1)
	}
}

// Close wakes an Accept that waits at the cap.
func TestCloseEndsAWaitingAccept(t *testing.T) {
	l := listen(t, 1, time.Hour)
	dial(t, l)
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("got %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
}

// serveHTTP serves l with the limiter attached to the server.
func serveHTTP(t *testing.T, l capped, h http.Handler) {
	t.Helper()
	srv := &http.Server{Handler: h, IdleTimeout: time.Minute}
	l.Attach(srv)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}

// get sends one keep-alive request on c and reads its answer.
func get(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(b)
}

// At the cap, a connection without a request in the works past the
// bound is closed so that a waiting one is served: a keep-alive one idle
// after its request, or a new one that has not sent a whole request head
// (slowloris), which would otherwise hold its place for the read-header
// timeout. A busy connection is not. The slow head, a request begun, gets
// the refusal first; the idle one, which sent no byte of a request, is
// closed without one.
func TestQuietConnectionClosedFirstAtTheCap(t *testing.T) {
	refusal := "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	for _, tc := range []struct {
		name  string
		quiet func(t *testing.T, c net.Conn)
		told  string // what the quiet connection reads before its end
	}{
		{"idle keep-alive", func(t *testing.T, c net.Conn) {
			if got := get(t, c); got != "ok" {
				t.Fatalf("got %q", got)
			}
		}, ""},
		{"slow head", func(t *testing.T, c net.Conn) {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: s") // and nothing more
		}, refusal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := listenWith(t, Config{Max: 2, IdleBound: 50 * time.Millisecond, Refusal: []byte(refusal)})
			l.idleGrace = 100 * time.Millisecond // the idle one's close (evict_test.go: what it is for)
			release := make(chan struct{})
			serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("hold") {
					<-release
				}
				io.WriteString(w, "ok")
			}))
			defer close(release)
			quiet := dial(t, l)
			tc.quiet(t, quiet)
			busy := dial(t, l)
			io.WriteString(busy, "GET /?hold HTTP/1.1\r\nHost: x\r\n\r\n")
			waiting := dial(t, l)
			start := time.Now()
			if got := get(t, waiting); got != "ok" {
				t.Fatalf("got %q", got)
			}
			if el := time.Since(start); el < 40*time.Millisecond {
				t.Fatalf("served after %s: the quiet connection was closed before its bound", el)
			}
			if n := l.IdleClosed(); n != 1 {
				t.Fatalf("%d connections closed, want 1", n)
			}
			// The quiet one was closed by the server, after the refusal
			// when it had begun a request: its read ends.
			quiet.SetReadDeadline(time.Now().Add(5 * time.Second))
			if got, err := io.ReadAll(quiet); err != nil || string(got) != tc.told {
				t.Fatalf("the quiet connection read %q, %v; want %q and its end", got, err, tc.told)
			}
			for r := range unansweredReasons {
				if n := l.Unanswered(r); n != 0 {
					t.Fatalf("%d closed unanswered: %s", n, unansweredName(r))
				}
			}
			// The busy one still gets its answer.
			busy.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := busy.Read(make([]byte, 1)); !isTimeout(err) {
				t.Fatalf("the busy connection: %v, want it still waiting for its answer", err)
			}
			if n := l.Open(); n > 2 {
				t.Fatalf("open %d past a cap of 2", n)
			}
		})
	}
}

func TestNewKeepsACapOfOneAtLeast(t *testing.T) {
	if l := listen(t, 0, 0); l.Max() != 1 || l.idleBound != DefaultIdleBound {
		t.Fatalf("max %d, idle bound %s", l.Max(), l.idleBound)
	}
}

// The metrics read the limiter: the cap, the open connections, the time
// at the cap.
func TestCollectors(t *testing.T) {
	l := listen(t, 1, time.Hour)
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collectors()...)
	dial(t, l)
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	want := map[string]func(float64) bool{
		"thumbd_connections_max":                   func(v float64) bool { return v == 1 },
		"thumbd_connections_open":                  func(v float64) bool { return v == 1 },
		"thumbd_connections_at_cap_seconds_total":  func(v float64) bool { return v >= 0.01 },
		"thumbd_connections_idle_closed_total":     func(v float64) bool { return v == 0 },
		"thumbd_connections_refused_total":         func(v float64) bool { return v == 0 },
		"thumbd_connections_idle_refused_total":    func(v float64) bool { return v == 0 },
		"thumbd_connections_address_refused_total": func(v float64) bool { return v == 0 },
		"thumbd_connections_slow_closed_total":     func(v float64) bool { return v == 0 },
		"thumbd_connections_waiting":               func(v float64) bool { return v == 0 },
		"thumbd_connections_probes_total":          func(v float64) bool { return v == 0 },
		"thumbd_connections_closed_unread_total":   func(v float64) bool { return v == 0 },
		"thumbd_connections_unanswered_total":      func(v float64) bool { return v == 0 },
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		m := f.GetMetric()[0]
		v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if ok := want[f.GetName()]; ok == nil || !ok(v) {
			t.Errorf("%s = %v", f.GetName(), v)
		}
		delete(want, f.GetName())
	}
	for name := range want {
		t.Errorf("%s not gathered", name)
	}
}

// An Accept waiting for a connection with a place free is not at the cap.
func TestWaitingForAConnectionIsNotAtTheCap(t *testing.T) {
	l := listen(t, 1, time.Hour)
	go l.Accept()
	time.Sleep(50 * time.Millisecond)
	if d := l.AtCap(); d != 0 {
		t.Fatalf("at the cap for %s with no connection open", d)
	}
}

// While a connection waits for a place, an answer ends its own
// (Connection: close), so that the place passes to the next in line and
// no keep-alive connection is left for the cap to close idle, racing the
// client's next request: an answer to a request begun while one waits,
// and one to a request begun before anyone waited (decided at the
// answer's head). With none waiting, connections are kept alive.
func TestAnswersEndTheirConnectionWhileOthersWait(t *testing.T) {
	l := listenWith(t, Config{Max: 1, IdleBound: time.Minute})
	entered, release := make(chan struct{}, 1), make(chan struct{})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}))
	type client struct {
		c  net.Conn
		br *bufio.Reader
	}
	open := func() client {
		c := dial(t, l)
		return client{c, bufio.NewReader(c)}
	}
	send := func(cl client, path string) {
		cl.c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(cl.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	answer := func(cl client) *http.Response {
		t.Helper()
		resp, err := http.ReadResponse(cl.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
			t.Fatalf("answer %q", b)
		}
		return resp
	}
	ended := func(cl client) {
		t.Helper()
		if _, err := cl.br.ReadByte(); err != io.EOF {
			t.Fatalf("after an answer with Connection: close: %v, want the connection's end", err)
		}
	}
	waiting := func() {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); l.Waiting() != 1; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%d connections waiting, want 1", l.Waiting())
			}
		}
	}

	first := open()
	send(first, "/")
	if answer(first).Close {
		t.Fatal("none waiting: the answer closed its connection")
	}
	// Begun before anyone waited, answered while one does.
	send(first, "/hold")
	<-entered
	second := open()
	send(second, "/")
	waiting()
	close(release)
	if !answer(first).Close {
		t.Fatal("a request begun before one waited, answered while one does: its connection kept alive")
	}
	ended(first)
	if answer(second).Close {
		t.Fatal("none waiting: the answer closed its connection")
	}
	// Begun while one waits.
	third := open()
	send(third, "/")
	waiting()
	send(second, "/")
	if !answer(second).Close {
		t.Fatal("a request begun while one waits: its connection kept alive")
	}
	ended(second)
	answer(third)
	if n := l.IdleClosed(); n != 0 {
		t.Fatalf("%d connections closed idle, want 0", n)
	}
}

// The answer's writer the cap wraps still lets http.ResponseController
// reach net/http's (the pipeline hijacks a connection it closes with an
// upload unread), and io.Copy into it still writes the answer.
func TestWrappedWriterUnwraps(t *testing.T) {
	l := listenWith(t, Config{Max: 2})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/copy" {
			io.Copy(w, strings.NewReader("copied"))
			return
		}
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		conn.Close()
	}))
	for path, want := range map[string]string{"/": "hijacked", "/copy": "copied"} {
		c := dial(t, l)
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != want {
			t.Fatalf("%s: %d %q, want %q", path, resp.StatusCode, b, want)
		}
	}
}
