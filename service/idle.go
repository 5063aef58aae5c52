package main

import (
	"context"
	"runtime/debug"

	"github.com/thumbd/thumbd/service/internal/memplan"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// startIdleRelease gives memory back once d's thumbnails have been idle
// (memplan.ReleaseWhenIdle) until ctx ends: in process, libvips' heap
// too; cells give theirs back by being recycled.
func startIdleRelease(ctx context.Context, d deps) {
	release := debug.FreeOSMemory
	if d.cfg.Engine == engineInProcess {
		release = func() {
			debug.FreeOSMemory()
			thumb.TrimHeap()
		}
	}
	memplan.ReleaseWhenIdle(ctx, d.thumbs.Gate, d.thumbs.Limits.Budget, release)
}
