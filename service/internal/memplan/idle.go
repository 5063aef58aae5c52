package memplan

import (
	"context"
	"time"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// idleRelease is how long thumbd must have held no thumbnail (no place
// taken, no source byte held) before it gives its free memory back.
const idleRelease = 10 * time.Second

// ReleaseWhenIdle gives the free memory back (release:
// debug.FreeOSMemory, and in process libvips' heap trimmed) once per idle
// period of the gate's thumbnails and the sources' budget, checked every
// second, until ctx ends.
func ReleaseWhenIdle(ctx context.Context, gate *admission.Gate, sources *admission.Bytes, release func()) {
	t := time.NewTicker(time.Second)
	seen := gate.Admitted()
	busy := func() bool {
		n := gate.Admitted()
		active := n != seen || gate.Running()+gate.Waiting() > 0 || sources.Used() > 0
		seen = n
		return active
	}
	go func() {
		defer t.Stop()
		releaseWhenIdle(ctx, t.C, busy, release)
	}()
}

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
