package memplan

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// Memory is given back once per idle period, after idleRelease without a
// thumbnail, and not while thumbnails come in.
func TestReleaseWhenIdle(t *testing.T) {
	tick := make(chan time.Time)
	var busy atomic.Bool
	busy.Store(true)
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseWhenIdle(ctx, tick, busy.Load, func() { released <- struct{}{} })
	}()
	t0 := time.Now()
	// The second send returns once the first tick has been handled; a
	// repeated tick changes nothing.
	at := func(d time.Duration) { tick <- t0.Add(d); tick <- t0.Add(d) }
	at(time.Second) // busy
	busy.Store(false)
	at(5 * time.Second)
	at(idleRelease)
	if len(released) != 0 {
		t.Fatal("released before idleRelease had passed")
	}
	at(idleRelease + 2*time.Second)
	at(idleRelease + 3*time.Second)
	at(10 * idleRelease)
	if len(released) != 1 {
		t.Fatalf("released %d times in one idle period", len(released))
	}
	busy.Store(true)
	at(11 * idleRelease)
	busy.Store(false)
	at(12*idleRelease + time.Second)
	cancel()
	<-done
	if len(released) != 2 {
		t.Fatalf("a new idle period released %d times in all", len(released))
	}
}
