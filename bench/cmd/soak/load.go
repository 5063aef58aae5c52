package main

import (
	"context"
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
