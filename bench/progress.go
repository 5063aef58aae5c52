package main

import (
	"fmt"
	"io"
	"time"
)

// progress prints what runs now, how far the run is and an ETA computed
// from the remaining planned work.
type progress struct {
	w         io.Writer
	start     time.Time
	total     time.Duration // planned
	done      time.Duration // planned work finished
	lastPhase string
}

func newProgress(w io.Writer, planned time.Duration) *progress {
	return &progress{w: w, start: time.Now(), total: planned}
}

// step announces a unit of work that is planned to take est.
func (p *progress) step(phase string, i, n int, what string, est time.Duration) {
	if phase != p.lastPhase {
		fmt.Fprintf(p.w, "== %s\n", phase)
		p.lastPhase = phase
	}
	elapsed := time.Since(p.start)
	// Remaining planned work: load steps, which dominate, take what they
	// are planned to take, so this is not rescaled by early phases' pace.
	eta := p.total - p.done
	pct := 0.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	fmt.Fprintf(p.w, "[%3.0f%% %s elapsed, ETA %s] %s %d/%d: %s\n", pct, round(elapsed), round(eta), phase, i, n, what)
	p.done += est
}

func (p *progress) note(format string, args ...any) {
	fmt.Fprintf(p.w, "   "+format+"\n", args...)
}

func round(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(time.Second)
}
