package main

import (
	"context"
	"time"
)

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
