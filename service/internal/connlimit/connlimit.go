// Package connlimit caps the connections a listener keeps open at once
// (THUMBD_MAX_CONNECTIONS). Past the cap a connection waits, unread, for a
// place: held in arrival order by the listener (an fd and a few hundred
// bytes each, no goroutine and no buffers), and past that bound in the
// kernel's backlog, instead of each costing a goroutine, its stack and its
// buffers. Probes are the exception: a connection past the cap whose head,
// already in the socket's buffer, is a probe's (GET /health, /ready,
// /metrics) is served at once in a small reserve of places of its own
// (probe.go), so that a liveness probe on the serving port is not queued
// behind the clients waiting for a place. While connections wait, those
// without a request in the works past a short bound (keep-alive ones
// between requests, new ones still sending their head) are closed first to
// make room, then those whose request makes too little progress (a body or
// an answer that moved no byte for a while, or too slowly: progress.go); a
// connection closed with a request begun is sent a 503 first (evict.go).
// Or, told to, each connection past the cap is accepted, sent the refusal
// and closed at once (THUMBD_PAST_CONNECTION_CAP=refuse). One client
// address may also be held to its own cap
// (THUMBD_MAX_CONNECTIONS_PER_ADDRESS): past it, its connections are
// refused.
package connlimit

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultIdleBound is how long a connection may have been without a
// request in the works (a keep-alive one between two requests, or a new
// one that has not sent a whole request head) before the cap, once
// reached, closes it to let a waiting one in: long enough that a client
// between two requests keeps its connection, short against the idle
// timeout (THUMBD_IDLE_TIMEOUT, 120 s) and the read-header timeout (5 s)
// that would otherwise hold the place.
const DefaultIdleBound = time.Second

// Config is a limiter's settings.
type Config struct {
	// Max is the cap on open connections (at least 1).
	Max int
	// IdleBound is how long a connection must have been without a
	// request in the works before the cap closes it (0: DefaultIdleBound).
	IdleBound time.Duration
	// Refusal is the whole HTTP answer a refused connection is sent
	// before it is closed, unread, and the answer of a connection closed
	// at the cap with a request head begun; nil: closed unanswered.
	Refusal []byte
	// RefusePastCap: a connection past the cap is accepted and refused;
	// false: it waits until a place frees.
	RefusePastCap bool
	// PerAddress is the most connections one client address (an IPv6
	// address's /64) may have open; past it the next is refused. 0: no
	// such cap.
	PerAddress int
	// Stall and MinRate judge a request the server is waiting on the
	// client for (its body, or the answer's bytes the client has not
	// taken yet): at the cap, a connection that has moved no byte for
	// Stall, or that moves them slower than MinRate bytes a second, is
	// closed to make room (progress.go). Stall 0: never; MinRate 0: only
	// the stall counts.
	Stall   time.Duration
	MinRate int64
	// Probes are the paths whose GET or HEAD, without a body, is served
	// past the cap in a reserve of places of its own (probe.go); none:
	// no reserve, a probe waits for a place as any connection does.
	Probes []string
	// Evicted is what a request's body read returns once the cap has
	// taken its connection's place back (a body too slow at the cap), for
	// the handler to answer; nil: ErrEvicted.
	Evicted error
}

// ErrEvicted is a body's read error once the cap has taken its
// connection's place back (Config.Evicted's default).
var ErrEvicted = errors.New("connlimit: the connection's place was taken back at the cap")

// Limiter holds the count of one listener's connections and its metrics;
// Listen wraps the socket. Attach it to the server (or set ConnState,
// ConnContext and Handler's wrapping yourself) so that it knows which
// connections are idle and which wait for a request's body.
type Limiter struct {
	max        int
	idleBound  time.Duration
	refusal    []byte        // written to a refused connection; nil: closed unanswered
	refuseCap  bool          // refuse past the cap rather than wait
	perAddress int           // 0: no cap per address
	refusing   chan struct{} // a place per refused connection being answered
	lingerFor  time.Duration // lingerFor; a test holds refusals open longer
	idleGrace  time.Duration // idleGrace; a test waits less
	now        func() time.Time
	epoch      time.Time // clock()'s zero
	stall      int64     // Config.Stall in ns; 0: progress not judged
	perByte    int64     // ns of waiting a byte moved earns
	probePaths []string  // Config.Probes
	evictedErr error     // Config.Evicted
	waitMax    int       // connections held waiting at most; past it, the kernel's backlog

	mu        sync.Mutex
	open      int // accepted and not yet closed
	conns     map[*conn]struct{}
	byAddress map[netip.Addr]int // open and waiting connections per client address, with PerAddress
	waiting   []arrival          // accepted, not yet handed to the server, oldest first
	probes    []arrival          // probes past the cap waiting for a place of the reserve
	probeOpen int                // probe connections served past the cap, open
	acceptErr error              // the socket's Accept failed: the next Accept returns it
	changed   chan struct{}      // closed and replaced when a place frees or a connection turns idle
	closed    bool
	done      chan struct{}
	capSince  time.Time       // when open reached max; zero below it
	atCap     time.Duration   // time at the cap, finished stretches
	idleShut  uint64          // idle connections closed to make room
	slowShut  [reasons]uint64 // connections closed at the cap for their request's progress, by reason
	refused   uint64          // connections past the cap sent the refusal
	addrShut  uint64          // connections past their address's cap refused
	probed    uint64          // probe connections served past the cap

	unanswered  [unansweredReasons]atomic.Uint64 // requests begun and closed without an answer, by reason
	unread      atomic.Uint64                    // connections closed with the client's bytes unread
	graced      atomic.Int64                     // connections taken back idle, kept for a request on its way (evict.go)
	idleRefused atomic.Uint64                    // of those, the ones whose request came and was refused
}

// arrival is a connection accepted from the socket, not yet handed to the
// server.
type arrival struct {
	c    net.Conn
	addr netip.Addr // the client address counted (invalid: none)
}

// New makes a limiter of cfg.
func New(cfg Config) *Limiter {
	idleBound := cfg.IdleBound
	if idleBound <= 0 {
		idleBound = DefaultIdleBound
	}
	evicted := cfg.Evicted
	if evicted == nil {
		evicted = ErrEvicted
	}
	l := &Limiter{
		max: max(cfg.Max, 1), idleBound: idleBound, refusal: cfg.Refusal, refuseCap: cfg.RefusePastCap, perAddress: max(cfg.PerAddress, 0),
		refusing: make(chan struct{}, maxRefusing), lingerFor: lingerFor, idleGrace: idleGrace, now: time.Now,
		probePaths: cfg.Probes, evictedErr: evicted, waitMax: waitingBound(),
		conns: map[*conn]struct{}{}, byAddress: map[netip.Addr]int{}, changed: make(chan struct{}), done: make(chan struct{}),
	}
	l.epoch = time.Now()
	if cfg.Stall > 0 {
		l.stall = int64(cfg.Stall)
		// Without a rate, any byte earns the whole allowance back.
		l.perByte = l.stall
		if cfg.MinRate > 0 {
			l.perByte = max(int64(time.Second)/cfg.MinRate, 1)
		}
	}
	return l
}

// Listen caps inner's connections, and starts taking them from it. A
// Limiter serves one listener: its Close ends the limiter's waits.
func (l *Limiter) Listen(inner net.Listener) net.Listener {
	ln := &listener{Listener: inner, l: l}
	go ln.take()
	return ln
}

// listener is the socket under the limiter's cap.
type listener struct {
	net.Listener
	l *Limiter
}

// take accepts from the socket for as long as it is open, while fewer
// than waitMax connections wait: each is handed to Accept, held until a
// place frees, served in the reserve when it is a probe, or refused
// (arrive).
func (ln *listener) take() {
	l := ln.l
	buf := make([]byte, headBytes)
	for {
		if !l.waitFor(func() bool { return len(l.waiting)+len(l.probes) < l.waitMax && l.acceptErr == nil }) {
			return
		}
		c, err := ln.Listener.Accept()
		if err != nil {
			l.mu.Lock()
			if l.closed || errors.Is(err, net.ErrClosed) {
				l.mu.Unlock()
				return
			}
			// The server's Serve takes it, and backs off before it asks
			// again (a temporary error: out of descriptors), or stops.
			l.acceptErr = err
			l.wake()
			l.mu.Unlock()
			continue
		}
		l.arrive(c, buf)
	}
}

// waitFor waits until ok (called with mu held) or the limiter closes:
// false then.
func (l *Limiter) waitFor(ok func() bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && !ok() {
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-l.done:
		}
		l.mu.Lock()
	}
	return !l.closed
}

// arrive sorts a connection just accepted from the socket: a probe past
// the cap (or past its address's) to the reserve; past its address's cap,
// refused unless one of the address's own idle connections gives way;
// past the cap with RefusePastCap, refused unless a connection gives way;
// else it waits for a place, in arrival order. buf is the caller's, for
// the probe's head.
func (l *Limiter) arrive(c net.Conn, buf []byte) {
	a := arrival{c: c, addr: addressOf(c.RemoteAddr())}
	l.mu.Lock()
	ownCap := func() bool { return l.perAddress > 0 && a.addr.IsValid() && l.byAddress[a.addr] >= l.perAddress }
	if len(l.probePaths) > 0 && (l.full() || ownCap()) {
		l.mu.Unlock()
		probe := isProbe(c, buf, l.probePaths)
		l.mu.Lock()
		if probe {
			l.probes = append(l.probes, arrival{c: c})
			l.wake()
			l.mu.Unlock()
			return
		}
	}
	var victim *conn // the connection that gives way to this one
	var why int
	switch {
	case ownCap():
		// Its own idle connection gives way to it, as at the cap;
		// else it is refused.
		if victim, _ = l.idlest(a.addr); victim == nil {
			l.addrShut++
			l.mu.Unlock()
			l.refuse(c)
			return
		}
		why = idleVictim
		l.idleShut++
		victim.closing = true
	case l.refuseCap && l.full():
		if victim, why, _ = l.victim(); victim == nil {
			l.refused++
			l.mu.Unlock()
			l.refuse(c)
			return
		}
	}
	if l.perAddress > 0 && a.addr.IsValid() {
		l.byAddress[a.addr]++ // the victim's count goes when it is closed
	}
	l.waiting = append(l.waiting, a)
	l.wake()
	l.mu.Unlock()
	if victim != nil {
		l.evict(victim, why)
	}
}

// full: a connection arriving now would wait for a place. Called with mu
// held.
func (l *Limiter) full() bool {
	return l.open+len(l.waiting) >= l.max
}

// Accept hands the server the next connection: a probe waiting for the
// reserve, else the oldest waiting connection once a place is free. While
// one waits at the cap it closes, to make room, a connection idle past
// the bound, else the one whose request is most overdue (progress.go).
func (ln *listener) Accept() (net.Conn, error) {
	l := ln.l
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	l.mu.Lock()
	for {
		switch {
		case l.closed:
			l.mu.Unlock()
			return nil, net.ErrClosed
		case l.acceptErr != nil:
			err := l.acceptErr
			l.acceptErr = nil
			l.wake() // the socket is asked again
			l.mu.Unlock()
			return nil, err
		case len(l.probes) > 0 && l.probeOpen < probeReserve:
			a := l.probes[0]
			l.probes = l.probes[1:]
			l.probeOpen++
			l.probed++
			tc := l.newConn(a, true)
			l.wake()
			l.mu.Unlock()
			return tc, nil
		case len(l.waiting) > 0 && l.open < l.max:
			a := l.waiting[0]
			l.waiting = l.waiting[1:]
			l.open++
			tc := l.newConn(a, false)
			l.conns[tc] = struct{}{}
			l.update()
			l.mu.Unlock()
			return tc, nil
		}
		var wait time.Duration
		if len(l.waiting) > 0 && !l.refuseCap {
			var victim *conn
			var why int
			if victim, why, wait = l.victim(); victim != nil {
				l.mu.Unlock()
				l.evict(victim, why) // its place frees at once
				l.mu.Lock()
				continue
			}
		}
		changed := l.changed
		l.mu.Unlock()
		var tick <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			tick = timer.C
		}
		select {
		case <-changed:
		case <-tick:
		case <-l.done:
		}
		l.mu.Lock()
	}
}

// newConn is a's connection as the server gets it; a probe's holds a
// place of the reserve. Called with mu held.
func (l *Limiter) newConn(a arrival, probe bool) *conn {
	tc := &conn{Conn: a.c, l: l, addr: a.addr, probe: probe}
	tc.inHead.Store(true)
	tc.read.balance.Store(l.stall)
	tc.write.balance.Store(l.stall)
	return tc
}

// victim is the connection to close for one waiting at the cap, and why
// (idleVictim or a progress reason): the idlest past the bound, else the
// most overdue; else nil and how long until one may be. Called with mu
// held; the victim is counted and marked closing.
func (l *Limiter) victim() (*conn, int, time.Duration) {
	victim, wait := l.idlest(netip.Addr{})
	why := idleVictim
	if victim != nil {
		l.idleShut++
	} else {
		var slowWait time.Duration
		if victim, why, slowWait = l.slowest(); victim != nil {
			l.slowShut[why]++
		}
		wait = sooner(wait, slowWait)
	}
	if victim != nil {
		victim.closing = true
	}
	return victim, why, wait
}

// addressOf is the client address a per-address cap counts: the IP
// address, or an IPv6 address's /64 (the least one client is given, so
// a client cannot pass the cap by changing the low bits); invalid when
// a is not TCP.
func addressOf(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// A refused connection is served by a goroutine of its own, at most
// maxRefusing at once (past that the next waits, unaccepted, for one to
// end): it waits up to refuseWithin for the request's head (at most
// headBytes; an answer written before the request is one HTTP clients
// drop as unsolicited, and retry), writes the refusal, then reads and
// discards at most lingerBytes of the rest for at most lingerFor before
// it closes: closing a socket with unread bytes resets it, and the reset
// can reach the client before it has read the refusal (as net/http's own
// rstAvoidanceDelay, for the same reason).
const (
	refuseWithin = 100 * time.Millisecond
	headBytes    = 8 << 10
	lingerFor    = 500 * time.Millisecond
	lingerBytes  = 256 << 10
	maxRefusing  = 64
)

// refuse answers c with the refusal and closes it, without serving it.
// A connection that sent no byte of a request gets nothing: that is no
// request.
func (l *Limiter) refuse(c net.Conn) {
	if l.refusal == nil {
		_ = l.closeRaw(c)
		return
	}
	select {
	case l.refusing <- struct{}{}:
	case <-l.done:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		_ = c.SetDeadline(time.Now().Add(refuseWithin))
		if n := readHead(c); n == 0 {
			_ = c.Close()
			return
		}
		l.answer(c)
		l.linger(c)
	}()
}

// answer writes the refusal to c within refuseWithin, then its FIN: the
// answer is whole. One that cannot be written is counted.
func (l *Limiter) answer(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(refuseWithin))
	if _, err := c.Write(l.refusal); err != nil {
		l.unanswered[refusalFailed].Add(1)
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// linger reads and discards what c still sends, at most lingerBytes for
// at most lingerFor, then closes it: see refuse.
func (l *Limiter) linger(c net.Conn) { l.discard(c, lingerBytes, l.lingerFor) }

// discard reads and discards what c still sends, at most n bytes for at
// most d, then closes it.
func (l *Limiter) discard(c net.Conn, n int64, d time.Duration) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, _ = io.CopyN(io.Discard, c, n)
	_ = l.closeRaw(c)
}

// closeRaw closes a socket, counting it when the client's bytes are left
// unread (the kernel then resets it).
func (l *Limiter) closeRaw(c net.Conn) error {
	if peek(c, make([]byte, 1)) > 0 {
		l.unread.Add(1)
	}
	return c.Close()
}

// readHead reads c up to the end of an HTTP request's head (a blank
// line), at most headBytes, until c ends, errs or sends more first: the
// bytes read.
func readHead(c net.Conn) int {
	buf := make([]byte, 0, headBytes)
	for len(buf) < cap(buf) {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, []byte("\r\n\r\n")) || err != nil {
			break
		}
	}
	return len(buf)
}

// idlest is the connection idle longest when it is past the bound, of
// client address addr when it is valid; else nil, and how long until the
// idlest one passes it (0: none is idle). A connection whose client's
// bytes wait in its socket is about to have a request in the works, not
// idle: it starts its bound again. Called with mu held.
func (l *Limiter) idlest(addr netip.Addr) (*conn, time.Duration) {
	for {
		var oldest *conn
		for c := range l.conns {
			if addr.IsValid() && c.addr != addr {
				continue
			}
			if c.idle && !c.closing && (oldest == nil || c.idleSince.Before(oldest.idleSince)) {
				oldest = c
			}
		}
		if oldest == nil {
			return nil, 0
		}
		if left := l.idleBound - l.now().Sub(oldest.idleSince); left > 0 {
			return nil, left
		}
		if peek(oldest.Conn, make([]byte, 1)) <= 0 {
			return oldest, 0
		}
		oldest.idleSince = l.now()
	}
}

// update starts or ends a stretch at the cap and wakes the waiters.
// Called with mu held after every change of open.
func (l *Limiter) update() {
	full := l.open >= l.max
	switch {
	case full && l.capSince.IsZero():
		l.capSince = l.now()
	case !full && !l.capSince.IsZero():
		l.atCap += l.now().Sub(l.capSince)
		l.capSince = time.Time{}
	}
	l.wake()
}

func (l *Limiter) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// ConnState is the http.Server's ConnState hook: it tells the listener
// which connections are idle between requests.
func (l *Limiter) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	// No request in the works: idle between two requests, or new, its
	// first request's head not read whole yet (net/http reports
	// StateActive only once readRequest has read a head).
	waiting := state == http.StateIdle || state == http.StateNew
	if waiting {
		c.headBytes.Store(false)
	}
	c.inHead.Store(waiting)
	if c.probe {
		return // in the reserve, not among the places
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// At the cap a connection trickling its head (slowloris) is closed
	// past the bound as an idle one is, instead of holding its place for
	// the read-header timeout; a client's head is one packet, read in
	// microseconds, and one that waited for a place is already in the
	// socket's buffer.
	c.idle = waiting
	if c.idle {
		c.body.Store(false)
		c.idleSince = l.now()
		l.wake() // a waiting Accept may now have a connection to close later
	}
	if state == http.StateActive {
		// A new request: its body and answer start with the whole
		// allowance. Nothing reads or writes c now (net/http reports
		// the state between reading the head and calling the handler).
		c.read.balance.Store(l.stall)
		c.write.balance.Store(l.stall)
	}
}

// Close closes the socket and the connections waiting for a place (they
// never reached the server: one that sent a request is refused first); a
// waiting Accept returns net.ErrClosed. Open connections are the server's
// to close.
func (ln *listener) Close() error {
	l := ln.l
	l.mu.Lock()
	var left []arrival
	if !l.closed {
		l.closed = true
		close(l.done)
		left = append(l.waiting, l.probes...)
		l.waiting, l.probes = nil, nil
	}
	l.mu.Unlock()
	err := ln.Listener.Close()
	for _, a := range left {
		if l.refusal == nil || peek(a.c, make([]byte, 1)) <= 0 {
			_ = a.c.Close()
			continue
		}
		go func() {
			l.answer(a.c)
			l.linger(a.c)
		}()
	}
	return err
}

// Max is the cap.
func (l *Limiter) Max() int { return l.max }

// Open is how many accepted connections are open now.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Waiting is how many connections wait for a place, or probes for one
// of the reserve, accepted and held.
func (l *Limiter) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting) + len(l.probes)
}

// queued: connections wait for a place (probes in their reserve aside).
func (l *Limiter) queued() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting) > 0
}

// AtCap is the time the listener has spent at its cap, the current
// stretch included: time during which a new connection waited, or would
// have.
func (l *Limiter) AtCap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.atCap
	if !l.capSince.IsZero() {
		d += l.now().Sub(l.capSince)
	}
	return d
}

// Refused is how many connections past the cap were sent the refusal.
func (l *Limiter) Refused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// IdleClosed is how many idle connections the cap has closed.
func (l *Limiter) IdleClosed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idleShut
}

// SlowClosed is how many connections the cap has closed for their
// request's progress, for one reason (reasonName names it).
func (l *Limiter) SlowClosed(reason int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slowShut[reason]
}

// AddressRefused is how many connections were refused because their
// client address had its cap of connections open.
func (l *Limiter) AddressRefused() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.addrShut
}

// Probed is how many probe connections were served past the cap, in
// the reserve.
func (l *Limiter) Probed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.probed
}

// Unanswered is how many connections were closed with a request begun
// and no answer, for one reason (unansweredName names it).
func (l *Limiter) Unanswered(reason int) uint64 { return l.unanswered[reason].Load() }

// readmit gives c, taken back idle, a place again for the request it has
// begun in its grace, once there is room and no one waits for one (the
// crowd has gone), waiting at most d for that (evict.go). Reports whether
// it did.
func (l *Limiter) readmit(c *conn, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		ok, changed := l.tryReadmit(c)
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		case <-l.done:
			return false
		}
	}
}

// tryReadmit is readmit's one try: whether c has its place, else the
// channel closed at the next change.
func (l *Limiter) tryReadmit(c *conn) (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.open >= l.max || len(l.waiting) > 0 || (l.perAddress > 0 && c.addr.IsValid() && l.byAddress[c.addr] >= l.perAddress) {
		return false, l.changed
	}
	c.released = false
	c.closing = false
	l.open++
	l.conns[c] = struct{}{}
	if l.perAddress > 0 && c.addr.IsValid() {
		l.byAddress[c.addr]++
	}
	l.update()
	return true, nil
}

// IdleRefused is how many connections taken back idle at the cap sent a
// request in their grace, and were sent the refusal for it (evict.go).
func (l *Limiter) IdleRefused() uint64 { return l.idleRefused.Load() }

// ClosedUnread is how many connections were closed with bytes of the
// client's unread, which the kernel answers with a reset.
func (l *Limiter) ClosedUnread() uint64 { return l.unread.Load() }

// conn gives its place back when closed, once.
type conn struct {
	net.Conn
	l     *Limiter
	addr  netip.Addr // the client address counted (invalid: none)
	probe bool       // a probe's, in the reserve: one request, no place
	// released: its place given back (guarded by l.mu).
	released bool
	// What the cap judges a request's progress by, updated by the
	// connection's own reads and writes without a lock (progress.go).
	read, write progress
	body        atomic.Bool // the request's body is wanted: reads wait on the client
	// A request's head is awaited (new, or idle between requests), and
	// bytes of it have come: a head begun (evict.go).
	inHead, headBytes atomic.Bool
	evicted           atomic.Bool  // the cap took its place back; answered, or to be
	grace             atomic.Int32 // what became of it once taken back idle (evict.go)
	// Guarded by l.mu.
	idle      bool
	idleSince time.Time
	closing   bool
}

// Close closes the socket and gives the place back. A connection the cap
// took back with a request begun lingers first, for its answer (evict.go).
func (c *conn) Close() error {
	if c.evicted.Load() {
		switch c.grace.Load() {
		case graceNone:
			c.release()
			c.l.linger(c.Conn)
			return nil
		case graceLate:
			c.release()
			c.l.discard(c.Conn, lateBytes, c.l.idleGrace)
			return nil
		}
	}
	if c.grace.CompareAndSwap(graceKept, graceQuiet) {
		c.l.graced.Add(-1) // closed in its grace (the server's shutdown)
	}
	err := c.l.closeRaw(c.Conn)
	c.release()
	return err
}

// release gives c's place back, once (until readmit gives it one again).
func (c *conn) release() {
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	c.released = true
	if c.probe {
		l.probeOpen--
		l.wake()
		return
	}
	delete(l.conns, c)
	if l.perAddress > 0 && c.addr.IsValid() {
		if l.byAddress[c.addr]--; l.byAddress[c.addr] <= 0 {
			delete(l.byAddress, c.addr)
		}
	}
	l.open--
	l.update()
}

// CloseWrite half-closes the socket (the FIN after an answer), when it
// can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
