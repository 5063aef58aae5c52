package connlimit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// every runs f every d, in a goroutine of wg, until stop is closed or f
// fails (the server closed the connection).
func every(d time.Duration, stop <-chan struct{}, wg *sync.WaitGroup, f func() error) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if f() != nil {
					return
				}
			}
		}
	}()
}

// trickle writes head to c, then piece every d.
func trickle(c net.Conn, head, piece string, d time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) {
	if _, err := io.WriteString(c, head); err != nil {
		return
	}
	every(d, stop, wg, func() error {
		_, err := io.WriteString(c, piece)
		return err
	})
}

// readSlowly reads n bytes from c every d.
func readSlowly(c net.Conn, n int, d time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) {
	buf := make([]byte, n)
	every(d, stop, wg, func() error {
		_, err := io.ReadFull(c, buf)
		return err
	})
}

// smallReceiveBuffer dials with a receive buffer of a few KiB, so that an
// answer the client does not read fills it (and the server's send
// buffer) soon.
func smallReceiveBuffer(t *testing.T, l capped) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.Dial("tcp", "127.0.0.1:"+portOf(l))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func portOf(l capped) string {
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// listenSmallSend is listenWith on a socket whose accepted connections
// have a small send buffer (Linux gives a listener's to the connections
// it accepts), so that the progress of an answer a client takes slowly
// shows in steps of a few KiB, not of the megabytes loopback's tuning
// would give.
func listenSmallSend(t *testing.T, cfg Config) capped {
	t.Helper()
	return listenOn(t, net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 8192) })
	}}, cfg)
}

// bigAnswer writes 8 MiB, more than a client's buffers and the server's
// hold: a client that does not read it keeps the write waiting.
func bigAnswer(w http.ResponseWriter, r *http.Request) {
	chunk := make([]byte, 64<<10)
	for range 128 {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// At the cap, connections whose request makes too little progress are
// closed to let a waiting client in, within about the stall bound; each
// is counted by its reason. Bodies: a head with a Content-Length, then a
// byte now and then (read by the handler, or left unread, which net/http
// then reads before it answers); answers: a client that takes nothing, or
// takes too little. Without the progress rules they would hold every
// place for the read or write timeout.
func TestSlowClientClosedAtTheCap(t *testing.T) {
	const limit = 4
	post := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
	get := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	readBody := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		handler http.HandlerFunc
		slow    func(t *testing.T, l capped, stop <-chan struct{}, wg *sync.WaitGroup)
		want    int
		within  time.Duration // a fresh client's answer, once the cap is held
	}{
		{"body stalled", Config{Stall: 200 * time.Millisecond}, readBody, func(t *testing.T, l capped, stop <-chan struct{}, wg *sync.WaitGroup) {
			trickle(dial(t, l), post, "x", 2*time.Second, stop, wg)
		}, bodyStalled, time.Second},
		{"body unread, stalled", Config{Stall: 200 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "ok")
		}, func(t *testing.T, l capped, stop <-chan struct{}, wg *sync.WaitGroup) {
			trickle(dial(t, l), post, "x", 2*time.Second, stop, wg)
		}, bodyStalled, time.Second},
		// 10 bytes every 50 ms (200 B/s) earn 10 ms of waiting at
		// 1000 B/s: the 1 s allowance runs out within about 1.3 s,
		// never with a second without a byte.
		{"body slow", Config{Stall: time.Second, MinRate: 1000}, readBody, func(t *testing.T, l capped, stop <-chan struct{}, wg *sync.WaitGroup) {
			trickle(dial(t, l), post, "0123456789", 50*time.Millisecond, stop, wg)
		}, bodySlow, 3 * time.Second},
		{"answer stalled", Config{Stall: 200 * time.Millisecond}, bigAnswer, func(t *testing.T, l capped, stop <-chan struct{}, wg *sync.WaitGroup) {
			io.WriteString(smallReceiveBuffer(t, l), get) // and never reads
		}, answerStalled, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Max = limit
			l := listenWith(t, tc.cfg)
			serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/fresh" {
					io.WriteString(w, "fresh")
					return
				}
				tc.handler(w, r)
			}))
			stop := make(chan struct{})
			var wg sync.WaitGroup
			defer wg.Wait()
			defer close(stop)
			for range limit {
				tc.slow(t, l, stop, &wg)
			}
			waitCap(t, l)
			fresh := dial(t, l)
			start := time.Now()
			fresh.SetDeadline(start.Add(5 * time.Second))
			io.WriteString(fresh, "GET /fresh HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(fresh), nil)
			if err != nil {
				t.Fatalf("the fresh client, after %s: %v", time.Since(start), err)
			}
			resp.Body.Close()
			el := time.Since(start)
			if el > tc.within {
				t.Fatalf("the fresh client was answered after %s, want within %s", el, tc.within)
			}
			t.Logf("the fresh client was answered after %s", el)
			if n := l.SlowClosed(tc.want); n < 1 {
				t.Fatalf("closed for %s: %d, want 1 at least (%s)", reasonName(tc.want), n, closedBy(l))
			}
			// An answer the client does not take cannot be followed by
			// another: counted as closed unanswered.
			if n := l.Unanswered(answerNotTaken); (n > 0) != (tc.want == answerStalled) {
				t.Fatalf("closed unanswered, the answer not taken: %d", n)
			}
			if n := l.Open(); n > limit {
				t.Fatalf("open %d past a cap of %d", n, limit)
			}
		})
	}
}

// An answer taken slower than the minimum rate is closed at the cap too,
// though bytes keep moving. The server's send buffer is small here so
// that the answer's progress shows as the client reads it.
func TestSlowAnswerClosedAtTheCap(t *testing.T) {
	const limit = 2
	// 8 KiB every 100 ms is 80 KiB/s, under 256 KiB/s: each 16 KiB
	// written waits about 0.2 s and earns 62 ms, so the 1 s allowance is
	// spent within about 1.5 s, never with a second without a byte.
	l := listenSmallSend(t, Config{Max: limit, Stall: time.Second, MinRate: 256 << 10})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fresh" {
			io.WriteString(w, "fresh")
			return
		}
		bigAnswer(w, r)
	}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range limit {
		c := smallReceiveBuffer(t, l)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		readSlowly(c, 8<<10, 100*time.Millisecond, stop, &wg)
	}
	waitCap(t, l)
	if got := get(t, dial(t, l)); got == "" {
		t.Fatal("the fresh client got nothing")
	}
	if n := l.SlowClosed(answerSlow); n < 1 {
		t.Fatalf("closed as answer_slow: %d, want 1 at least (%s)", n, closedBy(l))
	}
}

// closedBy lists what l has closed, by reason.
func closedBy(l capped) string {
	out := fmt.Sprintf("idle %d", l.IdleClosed())
	for r := range reasons {
		out += fmt.Sprintf(", %s %d", reasonName(r), l.SlowClosed(r))
	}
	return out
}

// waitCap waits until l has reached its cap (it may have closed a
// connection since to make room).
func waitCap(t *testing.T, l capped) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); l.AtCap() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d connections open, the cap of %d never reached", l.Open(), l.Max())
		}
	}
}

// At the cap, a request that keeps its allowance is never closed, however
// long it takes: an upload faster than the minimum rate, a request whose
// handler works after reading its body (net/http keeps a read in flight
// then, which waits on nothing the client owes), and one whose handler
// has not started reading its body yet (the server's own wait). The
// client waiting at the cap waits for them.
func TestProgressingRequestsKeptAtTheCap(t *testing.T) {
	const stall = time.Second
	l := listenWith(t, Config{Max: 3, Stall: stall, MinRate: 1000})
	release := make(chan struct{})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/work": // reads its body, then works
			io.Copy(io.Discard, r.Body)
			<-release
		case "/later": // works, then reads its body
			<-release
			io.Copy(io.Discard, r.Body)
		default: // reads its body
			io.Copy(io.Discard, r.Body)
		}
		io.WriteString(w, "ok")
	}))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	defer close(release)
	// 2000 bytes every 20 ms, 100 KB/s: each piece earns the whole
	// allowance back, so only a second without one (a test process
	// starved of CPU) could cost the upload its place.
	trickle(dial(t, l), "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n", strings.Repeat("x", 2000), 20*time.Millisecond, stop, &wg)
	work := dial(t, l)
	io.WriteString(work, "POST /work HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	later := dial(t, l)
	io.WriteString(later, "POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello") // half its body
	waitCap(t, l)
	waiting := dial(t, l)
	waiting.SetReadDeadline(time.Now().Add(5 * stall / 2))
	io.WriteString(waiting, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := waiting.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("the waiting client: %v; want it still waiting, every place kept (%s)", err, closedBy(l))
	}
	for r := range reasons {
		if n := l.SlowClosed(r); n != 0 {
			t.Fatalf("%d connections closed as %s", n, reasonName(r))
		}
	}
	if n := l.IdleClosed(); n != 0 {
		t.Fatalf("%d connections closed as idle", n)
	}
}

// One address past its cap is refused, counted, and never handed to the
// server; another address is served meanwhile, and a place of the first
// that frees takes its next connection again.
func TestPerAddressCap(t *testing.T) {
	refusal := []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	l := listenWith(t, Config{Max: 8, PerAddress: 2, Refusal: refusal})
	accepted := acceptAll(l)
	next := func(what string) net.Conn {
		t.Helper()
		select {
		case c := <-accepted:
			return c
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was not accepted", what)
			return nil
		}
	}
	dialFrom(t, l, "127.0.0.1")
	first := next("the first connection from 127.0.0.1")
	dialFrom(t, l, "127.0.0.1")
	next("the second connection from 127.0.0.1")

	third := dialFrom(t, l, "127.0.0.1")
	third.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if got, err := io.ReadAll(third); err != nil || string(got) != string(refusal) {
		t.Fatalf("the third connection from 127.0.0.1 read %q, %v; want the refusal", got, err)
	}
	other := dialFrom(t, l, "127.0.0.2")
	if c := next("a connection from 127.0.0.2"); c.RemoteAddr().String() != other.LocalAddr().String() {
		t.Fatalf("accepted %s, want the connection from %s", c.RemoteAddr(), other.LocalAddr())
	}
	if n := l.AddressRefused(); n != 1 {
		t.Fatalf("refused for their address: %d, want 1", n)
	}
	first.Close()
	dialFrom(t, l, "127.0.0.1")
	next("a connection from 127.0.0.1 once one of its places freed")
	if n, open := l.AddressRefused(), l.Open(); n != 1 || open != 3 {
		t.Fatalf("refused %d, open %d; want 1 and 3", n, open)
	}
}

// An address at its cap with a keep-alive connection idle past the bound
// has that one closed for its new connection, as the cap does; one idle
// for less is kept, and the new connection refused.
func TestPerAddressIdleGivesWay(t *testing.T) {
	refusal := []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	l := listenWith(t, Config{Max: 8, PerAddress: 1, IdleBound: 300 * time.Millisecond, Refusal: refusal})
	serveHTTP(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	if got := get(t, dial(t, l)); got != "ok" {
		t.Fatalf("got %q", got)
	}
	time.Sleep(350 * time.Millisecond)
	if got := get(t, dial(t, l)); got != "ok" {
		t.Fatalf("got %q", got)
	}
	if n, idle := l.AddressRefused(), l.IdleClosed(); n != 0 || idle != 1 {
		t.Fatalf("refused %d, idle closed %d; want 0 and 1", n, idle)
	}
	c := dial(t, l) // the second is idle for less than the bound
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if got, err := io.ReadAll(c); err != nil || string(got) != string(refusal) {
		t.Fatalf("read %q, %v; want the refusal", got, err)
	}
}

// An IPv6 client is counted by its /64, an IPv4-mapped address as IPv4.
func TestAddressOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::"},
	} {
		got := addressOf(net.TCPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr(tc.in), 80)))
		if got.String() != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, got, tc.want)
		}
	}
	if addressOf(&net.UnixAddr{Name: "x"}).IsValid() {
		t.Error("a Unix address counted")
	}
}
