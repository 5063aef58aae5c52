// Package startup times a fresh server from spawn to its first good answer,
// polling from inside the driver over raw TCP.
package startup

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Probe is one HTTP/1.1 request sent over a fresh connection until it gets
// a 200.
type Probe struct {
	Method, Path string
	Body         []byte
	// Timeout bounds one attempt once connected (write and read).
	Timeout time.Duration
}

func (p Probe) raw(host string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", p.Method, p.Path, host)
	if p.Body != nil {
		b.WriteString("Content-Type: application/octet-stream\r\nContent-Length: " + strconv.Itoa(len(p.Body)) + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(p.Body)
	return b.Bytes()
}

// Result is what one poll saw.
type Result struct {
	At       time.Time     // when the 200 had been read in full
	Attempts int           // connection attempts made
	MeanGap  time.Duration // mean time between attempts: the poll's resolution
}

// Poll sends p to addr every interval (or as soon after as the scheduler
// allows) until it is answered 200, ctx ends, or alive reports the server
// gone. Refused connections, resets and non-200 answers are retried.
func Poll(ctx context.Context, addr string, p Probe, interval time.Duration, alive func() error) (Result, error) {
	req := p.raw(addr)
	// nanosleep wakes up late by the thread's timer slack (50 µs by
	// default): stay on one thread and make its slack 1 ns.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	start := time.Now()
	var res Result
	var last error
	for {
		res.Attempts++
		ok, err := attempt(addr, req, p.Timeout)
		if ok {
			res.At = time.Now()
			res.MeanGap = res.At.Sub(start) / time.Duration(res.Attempts)
			return res, nil
		}
		last = err
		if ctx.Err() != nil {
			return res, fmt.Errorf("%w (last attempt: %v)", ctx.Err(), last)
		}
		if alive != nil {
			if err := alive(); err != nil {
				return res, err
			}
		}
		pause(interval)
	}
}

// pause sleeps with nanosleep(2) on this thread: Go's time.Sleep goes
// through the runtime's timers, which on Linux wake up with about 1 ms
// granularity below a millisecond, too coarse for a 5 ms startup.
func pause(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

var errNot200 = errors.New("status not 200")

func attempt(addr string, req []byte, timeout time.Duration) (bool, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(req); err != nil {
		return false, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("%w: %d", errNot200, resp.StatusCode)
	}
	return true, nil
}
