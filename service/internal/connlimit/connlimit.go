// Package connlimit caps the connections a listener keeps open at once
// (THUMBD_MAX_CONNECTIONS). At the cap Accept is not called on the socket,
// so further connections wait in the kernel's backlog instead of each
// costing a goroutine, its stack and its buffers; connections without a
// request in the works past a short bound (keep-alive ones between
// requests, new ones still sending their head) are closed first to make
// room, then those whose request makes too little progress (a body or an
// answer that moved no byte for a while, or too slowly: progress.go). Or,
// told to, each connection past the cap is accepted, sent the refusal and
// closed at once (THUMBD_PAST_CONNECTION_CAP=refuse). One client address
// may also be held to its own cap (THUMBD_MAX_CONNECTIONS_PER_ADDRESS):
// past it, its connections are refused.
package connlimit

import (
	"bytes"
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
	// before it is closed, unread; nil: it is closed unanswered.
	Refusal []byte
	// RefusePastCap: a connection past the cap is accepted and refused;
	// false: it waits in the kernel's backlog until a place frees.
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
}

// Limiter holds the count of one listener's connections and its metrics;
// Listen wraps the socket. Attach it to the server (or set ConnState,
// ConnContext and Handler's wrapping yourself) so that it knows which
// connections are idle and which wait for a request's body.
type Limiter struct {
	max        int
	idleBound  time.Duration
	refusal    []byte        // written to a refused connection; nil: closed unanswered
	refuseCap  bool          // refuse past the cap rather than wait in the backlog
	perAddress int           // 0: no cap per address
	refusing   chan struct{} // a place per refused connection being answered
	lingerFor  time.Duration // lingerFor; a test holds refusals open longer
	now        func() time.Time
	epoch      time.Time // clock()'s zero
	stall      int64     // Config.Stall in ns; 0: progress not judged
	perByte    int64     // ns of waiting a byte moved earns

	mu        sync.Mutex
	open      int // accepted and not yet closed
	reserved  int // places held by Accept calls waiting in the socket's Accept
	conns     map[*conn]struct{}
	byAddress map[netip.Addr]int // open connections per client address, with PerAddress
	changed   chan struct{}      // closed and replaced when a place frees or a connection turns idle
	closed    bool
	done      chan struct{}
	capSince  time.Time       // when open reached max; zero below it
	atCap     time.Duration   // time at the cap, finished stretches
	idleShut  uint64          // idle connections closed to make room
	slowShut  [reasons]uint64 // connections closed at the cap for their request's progress, by reason
	refused   uint64          // connections past the cap sent the refusal
	addrShut  uint64          // connections past their address's cap refused
}

// New makes a limiter of cfg.
func New(cfg Config) *Limiter {
	idleBound := cfg.IdleBound
	if idleBound <= 0 {
		idleBound = DefaultIdleBound
	}
	l := &Limiter{
		max: max(cfg.Max, 1), idleBound: idleBound, refusal: cfg.Refusal, refuseCap: cfg.RefusePastCap, perAddress: max(cfg.PerAddress, 0),
		refusing: make(chan struct{}, maxRefusing), lingerFor: lingerFor, now: time.Now,
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

// Listen caps inner's connections. A Limiter serves one listener: its
// Close ends the limiter's waits.
func (l *Limiter) Listen(inner net.Listener) net.Listener {
	return &listener{Listener: inner, l: l}
}

// listener is the socket under the limiter's cap.
type listener struct {
	net.Listener
	l *Limiter
}

// Accept waits for a place under the cap, closing a connection idle past
// the bound when one is, then accepts from the socket. With a refusal it
// does not wait: a connection accepted while the cap is still reached is
// sent the refusal and closed, and Accept goes on to the next.
func (ln *listener) Accept() (net.Conn, error) {
	l := ln.l
	for {
		placed, err := l.reserve()
		if err != nil {
			return nil, err
		}
		c, err := ln.Listener.Accept()
		l.mu.Lock()
		if placed {
			l.reserved--
		}
		if err != nil {
			l.update()
			l.mu.Unlock()
			return nil, err
		}
		if !placed && l.open+l.reserved >= l.max {
			l.refused++
			l.mu.Unlock()
			l.refuse(c)
			continue
		}
		addr := addressOf(c.RemoteAddr())
		var victim *conn // the address's idle connection that makes room
		if l.perAddress > 0 && addr.IsValid() {
			if l.byAddress[addr] >= l.perAddress {
				// Its own idle connection gives way to it, as at the
				// cap; else it is refused.
				if victim, _ = l.idlest(addr); victim == nil {
					l.addrShut++
					l.update() // its place, if it had one, is free again
					l.mu.Unlock()
					l.refuse(c)
					continue
				}
				victim.closing = true
				l.idleShut++
			}
			l.byAddress[addr]++ // the victim's count goes in its Close
		}
		l.open++
		tc := &conn{Conn: c, l: l, addr: addr}
		tc.read.balance.Store(l.stall)
		tc.write.balance.Store(l.stall)
		l.conns[tc] = struct{}{}
		l.update()
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		return tc, nil
	}
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
// maxRefusing at once (past that it is closed at once, unanswered): it
// waits up to refuseWithin for the request's head (at most headBytes;
// an answer written before the request is one HTTP clients drop as
// unsolicited, and retry), writes the refusal, then reads and discards
// at most lingerBytes of the rest for at most lingerFor before it
// closes: closing a socket with unread bytes resets it, and the reset
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
func (l *Limiter) refuse(c net.Conn) {
	if l.refusal == nil {
		_ = c.Close()
		return
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseWithin))
		if !readHead(c) {
			return
		}
		if _, err := c.Write(l.refusal); err != nil {
			return
		}
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite() // the refusal is whole: FIN after it
		}
		_ = c.SetReadDeadline(time.Now().Add(l.lingerFor))
		_, _ = io.CopyN(io.Discard, c, lingerBytes)
	}()
}

// readHead reads c up to the end of an HTTP request's head (a blank
// line), at most headBytes; false if c ends, errs or sends more first.
func readHead(c net.Conn) bool {
	buf := make([]byte, 0, headBytes)
	for len(buf) < cap(buf) {
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// reserve takes a place for one Accept, waiting while the cap is reached;
// refusing past the cap it does not wait, and says there is no place
// (false). At the cap it closes, to make room, a connection idle past
// its bound, else the one whose request is most overdue (progress.go).
func (l *Limiter) reserve() (bool, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return false, net.ErrClosed
		}
		if l.open+l.reserved < l.max {
			l.reserved++
			l.update()
			l.mu.Unlock()
			return true, nil
		}
		victim, wait := l.idlest(netip.Addr{})
		if victim != nil {
			l.idleShut++
		} else {
			var why int
			var slowWait time.Duration
			if victim, why, slowWait = l.slowest(); victim != nil {
				l.slowShut[why]++
			}
			wait = sooner(wait, slowWait)
		}
		if victim != nil {
			victim.closing = true
		}
		changed := l.changed
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // its place frees in Close
			continue
		}
		if l.refuseCap {
			return false, nil
		}
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
	}
}

// idlest is the connection idle longest when it is past the bound, of
// client address addr when it is valid; else nil, and how long until the
// idlest one passes it (0: none is idle). Called with mu held.
func (l *Limiter) idlest(addr netip.Addr) (*conn, time.Duration) {
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
	return oldest, 0
}

// update starts or ends a stretch at the cap and wakes the waiters.
// Called with mu held after every change of open or reserved. The cap is
// reached when the open connections fill it: a place reserved by an Accept
// still waiting for a connection would take the next one at once.
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
	l.mu.Lock()
	defer l.mu.Unlock()
	// No request in the works: idle between two requests, or new, its
	// first request's head not read whole yet (net/http reports
	// StateActive only once readRequest has read a head). At the cap a
	// connection trickling its head (slowloris) is closed past the bound
	// as an idle one is, instead of holding its place for the read-header
	// timeout; a client's head is one packet, read in microseconds, and
	// one that waited in the backlog is already in the socket's buffer.
	c.idle = state == http.StateIdle || state == http.StateNew
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

// Close closes the socket; a waiting Accept returns net.ErrClosed. Open
// connections are the server's to close.
func (ln *listener) Close() error {
	l := ln.l
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	return ln.Listener.Close()
}

// Max is the cap.
func (l *Limiter) Max() int { return l.max }

// Open is how many accepted connections are open now.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// AtCap is the time the listener has spent at its cap, the current
// stretch included: time during which a new connection waited in the
// backlog, or would have.
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

// conn gives its place back when closed, once.
type conn struct {
	net.Conn
	l    *Limiter
	addr netip.Addr // the client address counted (invalid: none)
	once sync.Once
	// What the cap judges a request's progress by, updated by the
	// connection's own reads and writes without a lock (progress.go).
	read, write progress
	body        atomic.Bool // the request's body is wanted: reads wait on the client
	// Guarded by l.mu.
	idle      bool
	idleSince time.Time
	closing   bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.conns, c)
		if l.perAddress > 0 && c.addr.IsValid() {
			if l.byAddress[c.addr]--; l.byAddress[c.addr] <= 0 {
				delete(l.byAddress, c.addr)
			}
		}
		l.open--
		l.update()
	})
	return err
}
