// Package connlimit caps the connections a listener keeps open at once
// (THUMBD_MAX_CONNECTIONS). At the cap Accept is not called on the socket,
// so further connections wait in the kernel's backlog instead of each
// costing a goroutine, its stack and its buffers; keep-alive connections
// idle past a short bound are closed first to make room.
package connlimit

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultIdleBound is how long a keep-alive connection may have been idle
// before the cap, once reached, closes it to let a waiting one in: long
// enough that a client between two requests keeps its connection, short
// against the idle timeout (THUMBD_IDLE_TIMEOUT, 120 s) that would
// otherwise hold the place.
const DefaultIdleBound = time.Second

// Limiter holds the count of one listener's connections and its metrics;
// Listen wraps the socket. Tell it the server's connection states
// (http.Server.ConnState = l.ConnState) so that it knows which ones are
// idle.
type Limiter struct {
	max       int
	idleBound time.Duration
	now       func() time.Time

	mu       sync.Mutex
	open     int // accepted and not yet closed
	reserved int // places held by Accept calls waiting in the socket's Accept
	conns    map[*conn]struct{}
	changed  chan struct{} // closed and replaced when a place frees or a connection turns idle
	closed   bool
	done     chan struct{}
	capSince time.Time     // when open reached max; zero below it
	atCap    time.Duration // time at the cap, finished stretches
	idleShut uint64        // idle connections closed to make room
}

// New caps inner at limit (at least 1) open connections; idleBound is how
// long a connection must have been idle before the cap closes it (0:
// DefaultIdleBound).
func New(limit int, idleBound time.Duration) *Limiter {
	if idleBound <= 0 {
		idleBound = DefaultIdleBound
	}
	return &Limiter{
		max: max(limit, 1), idleBound: idleBound, now: time.Now,
		conns: map[*conn]struct{}{}, changed: make(chan struct{}), done: make(chan struct{}),
	}
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
// the bound when one is, then accepts from the socket.
func (ln *listener) Accept() (net.Conn, error) {
	l := ln.l
	if err := l.reserve(); err != nil {
		return nil, err
	}
	c, err := ln.Listener.Accept()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reserved--
	if err != nil {
		l.update()
		return nil, err
	}
	l.open++
	tc := &conn{Conn: c, l: l}
	l.conns[tc] = struct{}{}
	l.update()
	return tc, nil
}

// reserve takes a place for one Accept, waiting while the cap is reached.
func (l *Limiter) reserve() error {
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
			return net.ErrClosed
		}
		if l.open+l.reserved < l.max {
			l.reserved++
			l.update()
			l.mu.Unlock()
			return nil
		}
		victim, wait := l.idlest()
		if victim != nil {
			victim.closing = true
			l.idleShut++
		}
		changed := l.changed
		l.mu.Unlock()
		if victim != nil {
			victim.Close() // its place frees in Close
			continue
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

// idlest is the connection idle longest when it is past the bound; else
// nil, and how long until the idlest one passes it (0: none is idle).
// Called with mu held.
func (l *Limiter) idlest() (*conn, time.Duration) {
	var oldest *conn
	for c := range l.conns {
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
	c.idle = state == http.StateIdle
	if c.idle {
		c.idleSince = l.now()
		l.wake() // a waiting Accept may now have a connection to close later
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

// IdleClosed is how many idle connections the cap has closed.
func (l *Limiter) IdleClosed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idleShut
}

// conn gives its place back when closed, once.
type conn struct {
	net.Conn
	l    *Limiter
	once sync.Once
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
		l.open--
		l.update()
	})
	return err
}
