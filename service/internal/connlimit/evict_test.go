package connlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// At the cap, an upload whose body has stalled is not closed silently to
// make room: its body's read fails with Config.Evicted, which its handler
// answers (here a 503), and the client reads that answer; the waiting
// client is served.
func TestSlowBodyAnsweredAtTheCap(t *testing.T) {
	evicted := errors.New("evicted")
	l := listenWith(t, Config{Max: 1, Stall: 200 * time.Millisecond, Evicted: evicted})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); errors.Is(err, evicted) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	slow := dial(t, l)
	trickle(slow, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", "x", 2*time.Second, stop, &wg)
	waitCap(t, l)
	if got := get(t, dial(t, l)); got != "ok" {
		t.Fatalf("the waiting client got %q", got)
	}
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("the stalled upload: %v; want its 503 (%s)", err, closedBy(l))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("the stalled upload: %d, Retry-After %q; want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := l.SlowClosed(bodyStalled); n != 1 {
		t.Fatalf("closed as body_stalled: %d, want 1", n)
	}
}

// A head begun and not finished within the server's read-header timeout
// is closed by net/http without an answer: counted, as head_timeout. A
// connection that sent nothing and timed out is no request: not counted.
func TestHeadTimeoutCounted(t *testing.T) {
	l := listenWith(t, Config{Max: 8})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond}
	l.Attach(srv)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	silent := dial(t, l)
	begun := dial(t, l)
	io.WriteString(begun, "GET / HTTP/1.1\r\nHost: x\r\n")
	for _, c := range []net.Conn{silent, begun} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Unanswered(headTimeout); n != 1 {
		t.Fatalf("head_timeout %d, want 1", n)
	}
}

// A connection closed with the client's bytes unread is counted (the
// kernel resets it); one closed with nothing left is not.
func TestClosedUnreadCounted(t *testing.T) {
	l := listen(t, 4, time.Hour)
	accepted := acceptAll(l)
	for i, sent := range []string{"", "unread"} {
		c := dial(t, l)
		io.WriteString(c, sent)
		s := <-accepted
		// The bytes reach the server's socket.
		for end := time.Now().Add(5 * time.Second); len(sent) > 0 && peek(s.(*conn).Conn, make([]byte, 1)) <= 0; time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("the client's bytes never came")
			}
		}
		s.Close()
		if n := l.ClosedUnread(); n != uint64(i) {
			t.Fatalf("after closing with %q unread: %d counted, want %d", sent, n, i)
		}
	}
}

// At the cap, a connection idle past the bound whose client's next bytes
// already wait in its socket is not closed for a waiting one (its
// request is about to start: closing it would lose that request); once
// it has none waiting, it is.
func TestBytesWaitingAreNotIdle(t *testing.T) {
	l := listen(t, 1, 50*time.Millisecond)
	accepted := acceptAll(l)
	client := dial(t, l)
	held := <-accepted
	l.ConnState(held, http.StateIdle) // idle, as net/http would say; nothing reads it here
	io.WriteString(client, "GET / HTTP/1.1\r\n")
	for end := time.Now().Add(5 * time.Second); peek(held.(*conn).Conn, make([]byte, 1)) <= 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the client's bytes never came")
		}
	}
	dial(t, l) // waits for the place
	select {
	case <-accepted:
		t.Fatalf("a waiting connection took the place of one with its request's bytes waiting (%d closed as idle)", l.IdleClosed())
	case <-time.After(300 * time.Millisecond):
	}
	io.ReadFull(held, make([]byte, len("GET / HTTP/1.1\r\n"))) // taken: idle, nothing waiting
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle connection was not closed for the waiting one")
	}
	if n := l.IdleClosed(); n != 1 {
		t.Fatalf("%d closed as idle, want 1", n)
	}
}

// Closing the listener refuses the connections still waiting for a place
// that sent a request, and closes those that sent nothing.
func TestCloseRefusesTheWaiting(t *testing.T) {
	refusal := "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	l := listenWith(t, Config{Max: 1, Refusal: []byte(refusal)})
	dial(t, l)
	if _, err := l.Accept(); err != nil {
		t.Fatal(err)
	}
	silent := dial(t, l)
	asking := dial(t, l)
	io.WriteString(asking, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	for end := time.Now().Add(5 * time.Second); l.Waiting() != 2 || peekWaiting(l) < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d waiting, want 2 with a request", l.Waiting())
		}
	}
	l.Close()
	for _, tc := range []struct {
		c    net.Conn
		want string
	}{{silent, ""}, {asking, refusal}} {
		tc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if got, err := io.ReadAll(tc.c); err != nil || string(got) != tc.want {
			t.Fatalf("read %q, %v; want %q and the end", got, err, tc.want)
		}
	}
}

// peekWaiting is how many of l's waiting connections have bytes waiting.
func peekWaiting(l capped) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, a := range l.waiting {
		if peek(a.c, make([]byte, 1)) > 0 {
			n++
		}
	}
	return n
}

// Refused past the cap, a connection that sent part of a head and no more
// within refuseWithin is answered all the same (a request begun); one
// that sent nothing is closed without an answer (no request).
func TestRefusalOfAHeadBegun(t *testing.T) {
	refusal := "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	l := listenRefusing(t, 1, time.Hour, []byte(refusal))
	accepted := acceptAll(l)
	dial(t, l)
	<-accepted
	begun := dial(t, l)
	io.WriteString(begun, "GET / HTTP/1.1\r\nHost: x")
	silent := dial(t, l)
	for _, tc := range []struct {
		c    net.Conn
		want string
	}{{begun, refusal}, {silent, ""}} {
		tc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if got, err := io.ReadAll(tc.c); err != nil || string(got) != tc.want {
			t.Fatalf("read %q, %v; want %q and the end", got, err, tc.want)
		}
	}
}

// A connection's half-close (the FIN after an answer, as the pipeline
// sends it before closing a connection with an upload unread) reaches the
// socket through the cap's wrapper: the client reads the end at once.
func TestCloseWriteReachesTheSocket(t *testing.T) {
	l := listen(t, 2, time.Hour)
	accepted := acceptAll(l)
	c := dial(t, l)
	s := <-accepted
	cw, ok := s.(interface{ CloseWrite() error })
	if !ok {
		t.Fatal("the cap's connection cannot half-close")
	}
	io.WriteString(s, "answer")
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(c); err != nil || string(got) != "answer" {
		t.Fatalf("read %q, %v; want the answer and its end", got, err)
	}
	s.Close()
}

// A keep-alive connection taken back idle at the cap gives its place at
// once, but its socket is kept for the grace: a request its client sends
// in that time (one already on its way as the cap decided), with the cap
// still full, gets the refusal after readmitWait, not a close under it,
// and its upload is read before the close, so that a client slower than
// the other refusals' 500 ms linger still reads the refusal instead of a
// reset. With no request it is closed once
// the grace ends, not before. At most the cap's number are kept so: past
// it, one is closed at once.
func TestIdleTakenBackRefusesItsNextRequest(t *testing.T) {
	refusal := "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	const grace = 1500 * time.Millisecond
	l := listenWith(t, Config{Max: 1, IdleBound: 50 * time.Millisecond, Refusal: []byte(refusal)})
	l.idleGrace = grace
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))

	first := dial(t, l)
	if got := get(t, first); got != "ok" {
		t.Fatalf("got %q", got)
	}
	second := dial(t, l) // takes the place of first, idle
	if got := get(t, second); got != "ok" {
		t.Fatalf("got %q", got)
	}
	if n, open := l.IdleClosed(), l.Open(); n != 1 || open != 1 {
		t.Fatalf("%d taken back idle, %d open; want 1 and 1", n, open)
	}
	// first's client, late, sends its next request on it: an upload
	// larger than the socket buffers, its body written after a pause
	// longer than the other refusals' linger, and its answer read last.
	first.SetDeadline(time.Now().Add(10 * time.Second))
	const upload = 24 << 20
	io.WriteString(first, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(upload)+"\r\n\r\n")
	time.Sleep(lingerFor + 300*time.Millisecond)
	if _, err := first.Write(make([]byte, upload)); err != nil {
		t.Fatalf("the upload on the connection taken back: %v (closed under it before it was read)", err)
	}
	if got, err := io.ReadAll(first); err != nil || string(got) != refusal {
		t.Fatalf("the request on the connection taken back read %q, %v; want the refusal and the end", got, err)
	}
	if n := l.IdleRefused(); n != 1 {
		t.Fatalf("%d refused, want 1", n)
	}

	third := dial(t, l) // takes the place of second, which sends nothing more
	start := time.Now()
	if got := get(t, third); got != "ok" {
		t.Fatalf("got %q", got)
	}
	fourth := dial(t, l) // takes third's place while second is in its grace: past the bound of 1
	if got := get(t, fourth); got != "ok" {
		t.Fatalf("got %q", got)
	}
	third.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(third); err != nil || len(got) != 0 {
		t.Fatalf("third read %q, %v; want its end", got, err)
	}
	if el := time.Since(start); el >= grace/2 {
		t.Fatalf("third, past the bound of connections kept, closed after %s: want at once", el)
	}
	second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(second); err != nil || len(got) != 0 {
		t.Fatalf("second read %q, %v; want its end", got, err)
	}
	if el := time.Since(start); el < grace/2 {
		t.Fatalf("second, taken back with no request, closed after %s: want its grace kept (%s)", el, grace)
	}
	if n := l.IdleRefused(); n != 1 {
		t.Fatalf("%d refused, want 1", n)
	}
	for r := range unansweredReasons {
		if n := l.Unanswered(r); n != 0 {
			t.Fatalf("%d closed unanswered: %s", n, unansweredName(r))
		}
	}
}

// A connection taken back idle whose client sends its next request once
// the cap has room again (no one waiting) is served, not refused: it
// takes a place again.
func TestIdleTakenBackServedWhenRoomAgain(t *testing.T) {
	refusal := "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
	l := listenWith(t, Config{Max: 1, IdleBound: 50 * time.Millisecond, Refusal: []byte(refusal)})
	l.idleGrace = 5 * time.Second
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	first := dial(t, l)
	if got := get(t, first); got != "ok" {
		t.Fatalf("got %q", got)
	}
	second := dial(t, l) // takes first's place
	if got := get(t, second); got != "ok" {
		t.Fatalf("got %q", got)
	}
	second.Close() // and leaves: room again
	for end := time.Now().Add(5 * time.Second); l.Open() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d open after the second left", l.Open())
		}
	}
	if got := get(t, first); got != "ok" {
		t.Fatalf("the request on the connection taken back, with room again: %q; want it served", got)
	}
	if open, refused := l.Open(), l.IdleRefused(); open != 1 || refused != 0 {
		t.Fatalf("%d open, %d refused; want 1 (its place again) and 0", open, refused)
	}
	// It holds its place as any: a newcomer waits for it, then takes it
	// back once it is idle again.
	third := dial(t, l)
	if got := get(t, third); got != "ok" {
		t.Fatalf("got %q", got)
	}
	if n := l.IdleClosed(); n != 2 {
		t.Fatalf("%d taken back idle, want 2", n)
	}
}

// A connection whose grace ended with no request is closed at once: a
// linger there (reading what comes, then a reset) would lose a request
// sent just then (TestIdleTakenBackRefusesItsNextRequest has the refused
// one, whose close reads first).
func TestQuietGraceClosesAtOnce(t *testing.T) {
	l := listen(t, 1, time.Hour)
	l.lingerFor = 5 * time.Second // a linger would show as a 5 s Close
	accepted := acceptAll(l)
	dial(t, l)
	c := (<-accepted).(*conn)
	c.evicted.Store(true)
	c.grace.Store(graceQuiet)
	start := time.Now()
	c.Close()
	if el := time.Since(start); el > time.Second {
		t.Fatalf("closed after %s: it lingered", el)
	}
}
