package connlimit

import (
	"bytes"
	"errors"
	"io"
	"net"
	"time"
)

// Taking a place back at the cap. A connection without a byte of a
// request (idle between requests, or new and silent) has no request to
// answer, but its client may be sending one as the cap decides: a client
// takes a keep-alive connection for open until it reads the close, and a
// request written on it after the close is lost without an answer (Go's
// transport: "server closed idle connection"; at 500 clients its
// goroutines are late by a second and more). So its place is given back
// at once, and the socket is kept for idleGrace: a request that comes in
// that time gets the refusal (a 503 with Retry-After), and the socket is
// closed once no request came. At most the cap's number of connections
// are kept so; past that, one is closed at once. One with a request begun
// gets an answer first, never silence:
//
//   - a head begun and not finished (a slowloris, or a keep-alive client's
//     next request as it comes): the refusal (a 503 with Retry-After),
//     written by the limiter, whose reader net/http then gives up;
//   - a body too slow: its read fails with Config.Evicted, which the
//     handler answers (a 503 with Retry-After; package pipeline);
//   - an answer the client is not taking: closed, and counted, since no
//     other answer can reach a client that does not read.
//
// A connection whose next bytes already wait in its socket is not idle
// (idlest). What can still close without an answer is counted by reason
// in Unanswered, and every close that leaves the client's bytes unread
// (which the kernel answers with a reset, and which can discard an answer
// the client has not read yet) in ClosedUnread.

// idleVictim is the reason of a connection closed at the cap for having
// no request in the works (the progress reasons are the others).
const idleVictim = reasons

// Why a request begun was closed without an answer (the reason label of
// thumbd_connections_unanswered_total).
const (
	answerNotTaken    = iota // closed at the cap while the client was not taking an answer begun
	answerTimeout            // the write timeout passed while the client was not taking the answer
	headTimeout              // a head begun and not finished within the read-header (or idle) timeout
	refusalFailed            // the refusal could not be written
	unansweredReasons        //
)

// unansweredName names an unanswered reason for the metrics.
func unansweredName(r int) string {
	switch r {
	case answerNotTaken:
		return "answer_not_taken"
	case answerTimeout:
		return "answer_timeout"
	case headTimeout:
		return "head_timeout"
	default:
		return "refusal_failed"
	}
}

// idleGrace is how long a connection taken back idle is kept for a
// request that was on its way: as long as net/http gives a request's head
// (the read-header timeout, 5 s). A request that comes gets the refusal,
// and the rest of it (its upload) is then read and discarded, at most
// lateBytes for at most idleGrace, before the close: its client is late
// by a second already (its connection was idle that long), and a close
// with its bytes unread resets the connection, which discards the refusal
// if the client has not read it yet (with the 500 ms linger of the other
// refusals, 500 clients on two shared cores saw 31 broken pipes on their
// uploads against 7 before, for 43 such refusals:
// bench/results/2026-12-06-idle-grace). These are few (at most the cap's
// number at once), so reading their uploads costs little, unlike the
// budget's refusals.
//
// Before it is refused, such a request waits up to readmitWait for the
// cap to have room again with no one waiting (a client whose connection
// was taken back as the crowd left is served, not refused); it does not
// queue with the connections waiting, which are ahead of it.
const (
	readmitWait = time.Second
	idleGrace   = 5 * time.Second
	lateBytes   = 32 << 20 // over the largest upload by default (THUMBD_MAX_BODY_BYTES, 20 MiB)
)

// What became of a connection taken back idle without a byte of a
// request (conn.grace).
const (
	graceNone  = iota // not taken back so, or readmitted
	graceKept         // in its grace: its next request is refused or readmitted
	graceQuiet        // its grace ended with no request: closed at once
	graceLate         // its request came and was refused: its close reads the upload first
)

// evictBound is how long a connection whose body was cut short has for
// its handler's answer before its socket is closed whatever it does.
const evictBound = 2 * time.Second

// aLongTimeAgo is a deadline that has passed: a read waiting on it ends.
var aLongTimeAgo = time.Unix(1, 0)

// evict takes victim's place back, for why (idleVictim or a progress
// reason), answering the request it has begun (above). Called without
// mu; the place is free when it returns.
func (l *Limiter) evict(victim *conn, why int) {
	switch {
	case why == idleVictim && l.refusal == nil:
		_ = victim.Close()
	case why == idleVictim && !victim.headBytes.Load():
		if l.graced.Add(1) > int64(l.max) {
			l.graced.Add(-1)
			_ = victim.Close()
			return
		}
		victim.grace.Store(graceKept)
		victim.evicted.Store(true) // from now net/http's deadlines do not move its reads
		_ = victim.Conn.SetReadDeadline(time.Now().Add(l.idleGrace))
		victim.release()
	case why == idleVictim:
		victim.evicted.Store(true) // from now net/http's deadlines do not move its reads
		victim.release()
		go func() {
			l.answer(victim.Conn)
			// net/http's read of the head ends, and it closes the
			// connection: Close lingers.
			_ = victim.Conn.SetReadDeadline(aLongTimeAgo)
		}()
	case why == bodyStalled || why == bodySlow:
		victim.evicted.Store(true)
		victim.release()
		// The body's read ends with l.evictedErr, for the handler to answer.
		_ = victim.Conn.SetReadDeadline(aLongTimeAgo)
		time.AfterFunc(evictBound, func() { _ = victim.Conn.Close() })
	default:
		l.unanswered[answerNotTaken].Add(1)
		_ = victim.Close()
	}
}

// refuseNext ends the read of a connection taken back idle (evict), got
// and err being what its socket gave. A request begun within its grace is
// served when the cap has room for it again within readmitWait
// (readmit); else it gets the refusal (the rest of its head read first:
// an answer written before the whole request is one HTTP clients drop as
// unsolicited), and its close then reads the upload for the client to
// read the refusal. With none it is closed at once. Either way net/http,
// reading a head, takes io.EOF as the connection's quiet end.
func (c *conn) refuseNext(got []byte, err error) (int, error) {
	if !c.grace.CompareAndSwap(graceKept, graceNone) {
		return 0, io.EOF // ended before (a read of a head cut short)
	}
	c.l.graced.Add(-1)
	if len(got) == 0 {
		c.grace.Store(graceQuiet)
		return 0, io.EOF
	}
	if c.l.readmit(c, readmitWait) {
		// Room again (the crowd has gone): served as any request.
		c.evicted.Store(false)
		_ = c.Conn.SetReadDeadline(time.Time{})
		return len(got), err
	}
	if err == nil && !bytes.Contains(got, []byte("\r\n\r\n")) {
		readHead(c.Conn)
	}
	c.l.idleRefused.Add(1)
	c.grace.Store(graceLate)
	c.l.answer(c.Conn)
	return 0, io.EOF
}

// sawRead follows the reads of a request's head: a head begun, and one
// begun that timed out (net/http then closes the connection without an
// answer: counted).
func (c *conn) sawRead(n int, err error) {
	if !c.inHead.Load() {
		return
	}
	if n > 0 && !c.headBytes.Load() {
		c.headBytes.Store(true)
	}
	if err != nil && !c.evicted.Load() && isTimeout(err) && c.headBytes.CompareAndSwap(true, false) {
		c.l.unanswered[headTimeout].Add(1) // once: net/http reads again before it closes
	}
}

// sawWrite counts an answer cut by the write timeout.
func (c *conn) sawWrite(err error) {
	if err != nil && !c.evicted.Load() && isTimeout(err) {
		c.l.unanswered[answerTimeout].Add(1)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// SetReadDeadline is net/http's, unless the cap took the connection back:
// then its reads are ended by the cap's deadline, which net/http must not
// move.
func (c *conn) SetReadDeadline(t time.Time) error {
	if c.evicted.Load() {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline: as SetReadDeadline for the read side.
func (c *conn) SetDeadline(t time.Time) error {
	if c.evicted.Load() {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}
