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

func loadMode(o options, srcs [][]byte, malloc string) (*result, error) {
	p, err := startThumbd(o, malloc)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "load", Malloc: malloc, Clients: o.clients, Backoff: o.backoff}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	bg, bgCancel := context.WithCancel(context.Background())
	defer bgCancel()
	rss := &rssSampler{}
	rssWG := sampleRSS(bg, p.pid, rss)
	health := &healthPoller{}
	hWG := pollHealth(ctx, p.base, health)
	cpu0, _ := procfs.CPUTime(p.pid)
	rec := &recorder{}
	start := time.Now()
	wg := loadClients(ctx, p.base, o.query, o.clients, srcs, o.deadline+30*time.Second, o.backoff, rec)
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	hWG.Wait()
	cpu1, _ := procfs.CPUTime(p.pid)
	r.CPUSeconds = (cpu1 - cpu0).Seconds()
	// RSS after the soak: what the allocator keeps once the load is gone.
	time.Sleep(10 * time.Second)
	if st, err := procfs.Read(p.pid); err == nil {
		r.RSSAfter = st.VmRSS
	}
	bgCancel()
	rssWG.Wait()
	r.PeakRSS, r.HWM = rss.peak.Load(), rss.hwm.Load()
	r.HealthPolls, r.HealthFails = int(health.polls.Load()), int(health.fails.Load())
	r.HealthMaxMs = float64(time.Duration(health.maxNs.Load()).Microseconds()) / 1000
	if gone, how := p.exited(); gone {
		r.fail("thumbd exited during the load (%s)", how)
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, false)
	for _, x := range rec.all {
		if x.kind == "refused" {
			r.fail("a connection was refused during the load: %s", x.err)
			break
		}
	}
	if r.HealthFails > 0 {
		r.fail("/health failed %d of %d polls (first: %v)", r.HealthFails, r.HealthPolls, health.firstFail.Load())
	}
	if r.Over200Deadline > 0 {
		r.fail("%d thumbnails answered 200 after the %s deadline (client-side)", r.Over200Deadline, o.deadline)
	}
	if r.ServerMax200ms > float64(o.deadline.Milliseconds()) {
		r.fail("thumbd answered a 200 after %.0f ms, deadline %s", r.ServerMax200ms, o.deadline)
	}
	if r.PeakRSS > o.rssBound {
		r.fail("peak RSS %d MiB over the %d MiB bound", r.PeakRSS>>20, o.rssBound>>20)
	}
	if r.Statuses["200"] == 0 {
		r.fail("no thumbnail succeeded")
	}
	return r, nil
}

func shutdownMode(o options, srcs [][]byte) (*result, error) {
	p, err := startThumbd(o, "")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "shutdown", Malloc: "glibc", Clients: o.clients, Backoff: o.backoff}
	// The workers run until the process has exited and a second more, so
	// requests keep arriving after the listener closed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	start := time.Now()
	wg := loadClients(ctx, p.base, o.query, o.clients, srcs, o.deadline+40*time.Second, o.backoff, rec)
	time.Sleep(o.termAfter)
	termAt := time.Now()
	p.terminate()
	code, ok := p.waitExit(60 * time.Second)
	if !ok {
		r.fail("thumbd did not exit within 60 s of SIGTERM")
		p.srv.Stop(0)
		code, _ = p.waitExit(time.Minute)
	}
	exitAt := time.Now()
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.ExitCode = code
	if code != 0 {
		r.fail("exit code %d", code)
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, true)
	var afterTerm200, afterTermAnswers, afterExitAnswers int
	for _, x := range rec.all {
		done := x.sentAt.Add(x.latency)
		if x.kind == "answer" && done.After(termAt) {
			afterTermAnswers++
			if x.status == 200 {
				afterTerm200++
			}
		}
		if x.kind == "answer" && x.sentAt.After(exitAt) {
			afterExitAnswers++
		}
	}
	r.note("SIGTERM after %s; exited %.0f ms later; %d answers (%d thumbnails) completed after SIGTERM; %d requests refused at connection level",
		o.termAfter, float64(exitAt.Sub(termAt).Milliseconds()), afterTermAnswers, afterTerm200, r.Refused)
	if afterExitAnswers > 0 {
		r.fail("%d requests sent after exit were answered", afterExitAnswers)
	}
	if afterTerm200 == 0 {
		r.fail("no admitted thumbnail completed after SIGTERM: the test proved nothing")
	}
	return r, nil
}

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
