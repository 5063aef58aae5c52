package main

import (
	"context"
	"testing"
	"time"
)

// Memory is given back once per idle period, after idleRelease without a
// thumbnail, and not while thumbnails come in.
func TestReleaseWhenIdle(t *testing.T) {
	tick := make(chan time.Time)
	busy := true
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseWhenIdle(ctx, tick, func() bool { return busy }, func() { released <- struct{}{} })
	}()
	t0 := time.Now()
	at := func(d time.Duration) { tick <- t0.Add(d) }
	at(time.Second) // busy
	busy = false
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
	busy = true
	at(11 * idleRelease)
	busy = false
	at(12*idleRelease + time.Second)
	cancel()
	<-done
	if len(released) != 2 {
		t.Fatalf("a new idle period released %d times in all", len(released))
	}
}
