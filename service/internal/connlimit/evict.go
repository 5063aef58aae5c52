package connlimit

import (
	"errors"
	"net"
	"time"
)

// Taking a place back at the cap. A connection without a byte of a
// request (idle between requests, or new and silent) is closed: that is
// no request. One with a request begun gets an answer first, never
// silence:
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
	case why == idleVictim && (!victim.headBytes.Load() || l.refusal == nil):
		_ = victim.Close()
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
