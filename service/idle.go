package main

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/thumbd/thumbd/service/internal/thumb"
)

// idleRelease is how long thumbd must have held no thumbnail (no place
// taken, no source byte held) before it gives its free memory back.
const idleRelease = 10 * time.Second

// releaseWhenIdle returns the Go heap's (and in process, the C heap's) free
// memory to the system once per idle period: after a burst of large sources the runtime would otherwise
// keep the pages until its forced collection and its scavenger get to them,
// minutes later. busy says whether any thumbnail is in the works; release
// does the returning (debug.FreeOSMemory); tick paces the checks. It
// returns when ctx is done.
func releaseWhenIdle(ctx context.Context, tick <-chan time.Time, busy func() bool, release func()) {
	lastBusy, released := time.Now(), true
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick:
			switch {
			case busy():
				lastBusy, released = now, false
			case !released && now.Sub(lastBusy) >= idleRelease:
				release()
				released = true
			}
		}
	}
}

// startIdleRelease runs releaseWhenIdle for d's thumbnails until ctx ends.
func startIdleRelease(ctx context.Context, d deps) {
	t := time.NewTicker(time.Second)
	gate, seen := d.thumbs.Gate, d.thumbs.Gate.Admitted()
	busy := func() bool {
		n := gate.Admitted()
		active := n != seen || gate.Running()+gate.Waiting() > 0 || d.thumbs.Limits.Budget.Used() > 0
		seen = n
		return active
	}
	release := debug.FreeOSMemory
	if d.cfg.Engine == engineInProcess {
		release = func() {
			debug.FreeOSMemory()
			thumb.TrimHeap() // cells give theirs back by being recycled
		}
	}
	go func() {
		defer t.Stop()
		releaseWhenIdle(ctx, t.C, busy, release)
	}()
}
