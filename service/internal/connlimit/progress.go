package connlimit

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// A request's progress, as the cap judges it. The server waits on the
// client in two places: reading the request's body, and writing the
// answer faster than the client takes it. Each direction of a connection
// keeps an allowance of waiting (its balance): a read or write that
// waits spends it, and each byte moved earns 1/MinRate s back, at most
// Stall banked. A client is overdue once the read or write in flight has
// waited longer than its balance: after Stall without a byte (nginx's
// client_body_timeout and send_timeout, the time between two successive
// reads or writes), sooner when it has been slower than MinRate (Apache's
// mod_reqtimeout MinRate, without its unbounded credit: a fast start
// banks no more than Stall, so it cannot pay for a trickle later). A
// byte moved forgives what was overdue before it: only the current wait
// is judged. Time the server spends on its own work (a thumbnail being
// made, an upload waiting for the source budget) is no read or write in
// flight, and costs the client nothing.
//
// Nothing is closed below the cap: a slow client harms no one while
// places are free. At the cap, the overdue connection that is furthest
// past its allowance is closed to free a place for the next connection,
// after the idle ones (reserve).
//
// The reads of a body and the writes keep their figures in atomics,
// without a lock: two readings of the monotonic clock and three stores
// each. The cap's scan reads them under its own lock.

// progress is one direction of a connection. Only the goroutine reading
// (or writing) updates it; net/http never reads or writes one connection
// from two goroutines at once.
type progress struct {
	since   atomic.Int64 // clock() at the start of the read or write in flight; 0: none
	balance atomic.Int64 // ns of waiting left, as of since
}

// done ends the read or write that started at start, at end, having
// moved n bytes.
func (p *progress) done(start, end int64, n int, bound, perByte int64) {
	// since first: a scan that reads since after the balance (overdue)
	// then never pairs the old start with the new balance.
	p.since.Store(0)
	if n <= 0 {
		return // an error or the end: the connection is going anyway
	}
	b := max(p.balance.Load()-(end-start), 0) + int64(n)*perByte
	p.balance.Store(min(b, bound))
}

// overdue is how far the read or write in flight is past its allowance
// at now (> 0: overdue; <= 0: due in -over), whether it has moved no byte
// for bound (stalled, rather than slow), and whether one is in flight.
func (p *progress) overdue(now, bound int64) (over int64, stalled, inFlight bool) {
	b := p.balance.Load()
	since := p.since.Load()
	if since == 0 {
		return 0, false, false
	}
	waited := now - since
	return waited - b, waited >= bound, true
}

// Why a connection was closed for its request's progress (the reason
// label of thumbd_connections_slow_closed_total).
const (
	bodyStalled   = iota // no byte of the request's body for the stall bound
	bodySlow             // the body slower than the minimum rate
	answerStalled        // the client took no byte of the answer for the stall bound
	answerSlow           // the client took the answer slower than the minimum rate
	reasons
)

// reasonName names a reason for the metrics.
func reasonName(r int) string {
	switch r {
	case bodyStalled:
		return "body_stalled"
	case bodySlow:
		return "body_slow"
	case answerStalled:
		return "answer_stalled"
	default:
		return "answer_slow"
	}
}

func reason(answer, stalled bool) int {
	switch {
	case answer && stalled:
		return answerStalled
	case answer:
		return answerSlow
	case stalled:
		return bodyStalled
	default:
		return bodySlow
	}
}

// overdue judges c at now: how far past its allowance (as
// progress.overdue), why, and whether the server waits on its client at
// all. A read counts only while the request's body is wanted (Read times
// no other; net/http keeps one in flight after the body to notice a
// client that goes away). When both a read and a write are waited on,
// the one still within its allowance speaks for the connection: a client
// taking the answer is not stalled because a body nobody reads has
// stopped.
func (c *conn) overdue(now, bound int64) (over int64, why int, waited bool) {
	rOver, rStalled, rIn := c.read.overdue(now, bound)
	rIn = rIn && c.body.Load()
	wOver, wStalled, wIn := c.write.overdue(now, bound)
	switch {
	case rIn && (!wIn || rOver < wOver):
		return rOver, reason(false, rStalled), true
	case wIn:
		return wOver, reason(true, wStalled), true
	}
	return 0, 0, false
}

// rescan is how often a scan at the cap looks again for reads and writes
// that started since the last: those start without the lock, and so
// without waking it.
const rescan = 100 * time.Millisecond

// slowest is the connection furthest past its allowance, and why; else
// nil and how long until the first could be (at most rescan). Called
// with mu held; 0 and nil when progress is not judged.
func (l *Limiter) slowest() (*conn, int, time.Duration) {
	if l.stall == 0 {
		return nil, 0, 0
	}
	now := l.clock()
	var worst *conn
	var worstOver int64
	var worstWhy int
	wait := int64(rescan)
	for c := range l.conns {
		if c.idle || c.closing {
			continue
		}
		over, why, waited := c.overdue(now, l.stall)
		switch {
		case !waited:
		case over > 0 && (worst == nil || over > worstOver):
			worst, worstOver, worstWhy = c, over, why
		case over <= 0:
			wait = min(wait, 1-over)
		}
	}
	if worst != nil {
		return worst, worstWhy, 0
	}
	return nil, 0, time.Duration(wait)
}

// sooner is the shorter of two waits, 0 being none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// clock is the time since the limiter was made, in ns, never 0: one
// reading of the monotonic clock (time.Since's fast path), not the two
// of time.Now.
func (l *Limiter) clock() int64 {
	return int64(time.Since(l.epoch)) + 1
}

// writeChunk is the most a write hands the socket at once, so that a
// long answer shows its progress as it goes (the kernel takes an
// answer's bytes as the client acknowledges them, and one large write
// would show none until the last). At the defaults (8 KiB/s, 5 s) a
// client taking the answer at the minimum rate earns its 16 KiB's wait
// well within the allowance.
const writeChunk = 16 << 10

// Read is timed only while the request's body is wanted: the head and
// net/http's read in flight between requests wait on nothing the client
// owes.
func (c *conn) Read(p []byte) (int, error) {
	l := c.l
	if l.stall == 0 || !c.body.Load() {
		n, err := c.Conn.Read(p)
		if c.grace.Load() == graceKept && c.inHead.Load() {
			return c.refuseNext(p[:n], err) // taken back idle (evict.go)
		}
		c.sawRead(n, err)
		return n, err
	}
	start := l.clock()
	c.read.since.Store(start)
	n, err := c.Conn.Read(p)
	c.read.done(start, l.clock(), n, l.stall, l.perByte)
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	l := c.l
	if l.stall == 0 {
		n, err := c.Conn.Write(p)
		c.sawWrite(err)
		return n, err
	}
	written := 0
	for {
		chunk := p[written:min(len(p), written+writeChunk)]
		start := l.clock()
		c.write.since.Store(start)
		n, err := c.Conn.Write(chunk)
		c.write.done(start, l.clock(), n, l.stall, l.perByte)
		written += n
		if err != nil || written == len(p) {
			c.sawWrite(err)
			return written, err
		}
	}
}

// connKey is the context key of a request's *conn (ConnContext).
type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: a request's context
// carries its connection, for Handler.
func (l *Limiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c, ok := nc.(*conn); ok {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// Handler serves a probe's connection in the reserve one request only,
// serves nothing on a connection the cap has taken back (it was answered
// already), and tells the cap when a request's body is wanted: from the
// request's start until its body ends (net/http reads a body the handler
// left unread, up to 256 KiB, before the answer; that counts too), or
// the connection is idle again. Only then does a read wait on the client.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*conn)
		if c != nil && !c.probe && !c.evicted.Load() {
			w = &closeWhenQueued{ResponseWriter: w, l: l}
		}
		switch {
		case c == nil:
		case c.evicted.Load():
			// Its head was finished as the cap answered it.
			panic(http.ErrAbortHandler)
		case c.probe:
			// A place of the reserve serves one probe: a client cannot
			// keep it for other requests.
			w.Header().Set("Connection", "close")
		case l.stall > 0 && r.Body != nil && r.Body != http.NoBody:
			c.body.Store(true)
			// A copy with the wrapped body: net/http keeps its own
			// request, whose Body's type tells it what to do with a body
			// left unread.
			r = r.WithContext(r.Context())
			r.Body = &body{ReadCloser: r.Body, c: c}
		}
		next.ServeHTTP(w, r)
	})
}

// closeWhenQueued is an answer's writer that decides, as the answer's
// head is written, whether its connection ends after it: it does while
// connections wait for a place, so that the place goes to the next in
// line, not kept by a keep-alive client, and the cap never has to close
// it idle. Such a close races the client's next request, which is lost
// (net/http's "server closed idle connection", or a broken pipe on its
// body): HTTP/1.1 lets a server end a connection cleanly only after an
// answer. Deciding at the head, not when the request starts, also ends
// the connections of requests that began before anyone waited (the
// crowd's first wave).
type closeWhenQueued struct {
	http.ResponseWriter
	l       *Limiter
	decided bool
}

func (w *closeWhenQueued) decide(code int) {
	if w.decided || code < http.StatusOK { // an informational head is not the answer's
		return
	}
	w.decided = true
	if w.l.queued() {
		w.Header().Set("Connection", "close")
	}
}

func (w *closeWhenQueued) WriteHeader(code int) {
	w.decide(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeWhenQueued) Write(b []byte) (int, error) {
	w.decide(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach net/http's writer (Flush,
// Hijack, deadlines). A head flushed before any write is not decided:
// its connection stays as net/http leaves it.
func (w *closeWhenQueued) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Attach sets srv's hooks (ConnState, ConnContext) and wraps its Handler,
// so that the limiter knows which connections are idle and which wait for
// a body, and which serve a probe past the cap.
func (l *Limiter) Attach(srv *http.Server) {
	srv.ConnState = l.ConnState
	srv.ConnContext = l.ConnContext
	srv.Handler = l.Handler(srv.Handler)
}

// body is a request's body that says when it ends.
type body struct {
	io.ReadCloser
	c *conn
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.c.body.Store(false) // its end, or an error: no more of it is wanted
		if err != io.EOF && b.c.evicted.Load() {
			err = b.c.l.evictedErr // cut short at the cap: the handler answers it
		}
	}
	return n, err
}
