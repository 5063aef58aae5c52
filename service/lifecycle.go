package main

import "sync/atomic"

// serviceState is where the process is in its life: it answers /ready.
type serviceState int32

const (
	stateStarting serviceState = iota
	stateReady
	stateDraining
)

func (s serviceState) String() string {
	switch s {
	case stateReady:
		return "ready"
	case stateDraining:
		return "draining"
	}
	return "starting"
}

// lifecycle tracks the state and tells waiters when the engine is up.
type lifecycle struct {
	current     atomic.Int32
	engineReady chan struct{} // closed once libvips has started
}

func newLifecycle() *lifecycle { return &lifecycle{engineReady: make(chan struct{})} }

func (l *lifecycle) state() serviceState { return serviceState(l.current.Load()) }

// engineStarted marks libvips up; /ready turns 200 unless already draining.
func (l *lifecycle) engineStarted() {
	close(l.engineReady)
	l.current.CompareAndSwap(int32(stateStarting), int32(stateReady))
}

// drain turns /ready to 503 for good.
func (l *lifecycle) drain() { l.current.Store(int32(stateDraining)) }
