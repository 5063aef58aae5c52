package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
)

func slowlorisMode(o options, srcs [][]byte) (*result, error) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(2*o.slowConns+200) {
		return nil, fmt.Errorf("ulimit -n is %d, the slowloris mode needs %d", lim.Cur, 2*o.slowConns+200)
	}
	p, err := startThumbd(o, "")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "slowloris", Malloc: "glibc", Clients: o.slowConns}
	ctx, cancel := context.WithTimeout(context.Background(), o.slowFor)
	defer cancel()
	addr := strings.TrimPrefix(p.base, "http://")
	var open, reopened atomic.Int64
	var wg sync.WaitGroup
	// Three kinds: headers sent a byte at a time (reconnecting when the
	// server's header timeout closes them), idle keep-alives after one
	// request, and POST /thumbnail bodies sent a byte a second.
	for i := 0; i < o.slowConns; i++ {
		kind := "headers"
		switch {
		case i < o.slowBodies:
			kind = "body"
		case i%2 == 1:
			kind = "idle"
		}
		wg.Add(1)
		go func(kind string) {
			defer wg.Done()
			slowConn(ctx, addr, kind, &open, &reopened)
		}(kind)
		if i%100 == 99 {
			time.Sleep(20 * time.Millisecond) // do not overflow the accept backlog
		}
	}
	time.Sleep(2 * time.Second) // let them settle
	r.note("%d slow connections open after 2 s (%d slow bodies)", open.Load(), o.slowBodies)
	health := &healthPoller{}
	hWG := pollHealth(ctx, p.base, health)
	rec := &recorder{}
	client := &http.Client{Timeout: 2 * o.deadline}
	start := time.Now()
	for ctx.Err() == nil {
		for _, src := range srcs {
			rec.add(postOnce(client, p.base+"/thumbnail?"+o.query, fmt.Sprintf("soak-slow-%d", len(rec.all)), src))
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.Seconds = time.Since(start).Seconds()
	hWG.Wait()
	cancel()
	wg.Wait()
	r.note("%d slow connections re-opened after the server closed them", reopened.Load())
	r.HealthPolls, r.HealthFails = int(health.polls.Load()), int(health.fails.Load())
	r.HealthMaxMs = float64(time.Duration(health.maxNs.Load()).Microseconds()) / 1000
	if st, err := procfs.Read(p.pid); err == nil {
		r.PeakRSS, r.HWM = st.VmHWM, st.VmHWM
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, false)
	if r.HealthFails > 0 {
		r.fail("/health failed %d of %d polls under slowloris", r.HealthFails, r.HealthPolls)
	}
	if r.Statuses["200"] == 0 || r.Statuses["200"] < r.Requests*9/10 {
		r.fail("only %d of %d thumbnails succeeded under slowloris", r.Statuses["200"], r.Requests)
	}
	return r, nil
}

// slowConn holds one slow connection until ctx is done, reconnecting when
// the server closes it.
func slowConn(ctx context.Context, addr, kind string, open, reopened *atomic.Int64) {
	first := true
	for ctx.Err() == nil {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if first {
			open.Add(1)
			first = false
		} else {
			reopened.Add(1)
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		switch kind {
		case "idle":
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
			buf := make([]byte, 4096)
			c.Read(buf) // the answer
			c.Read(buf) // then wait, idle, until the server or ctx closes it
		case "headers":
			req := "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"
			for i := 0; i < len(req) && ctx.Err() == nil; i++ {
				if _, err := c.Write([]byte{req[i]}); err != nil {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		case "body":
			fmt.Fprintf(c, "POST /thumbnail HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n\xff\xd8\xff")
			for ctx.Err() == nil {
				if _, err := c.Write([]byte{0}); err != nil {
					break
				}
				time.Sleep(time.Second)
			}
		}
		stop()
		c.Close()
	}
}
