// Package admission bounds work: a fixed number of jobs run at once and a
// fixed number wait; anyone beyond that is turned away at once instead of
// piling up (the pattern of imgproxy's workers and chi's ThrottleBacklog).
package admission

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrFull means every running slot and every waiting place is taken.
var ErrFull = errors.New("admission: queue full")

// Gate admits up to slots running jobs plus queue waiting ones.
type Gate struct {
	tickets  chan struct{} // one per admitted job, waiting, running or finished
	slots    chan struct{} // one per running job
	finished atomic.Int64  // jobs done with their slot, not yet released
	admitted atomic.Uint64
}

// New returns a gate with slots running places and queue waiting places.
func New(slots, queue int) *Gate {
	return &Gate{tickets: make(chan struct{}, slots+queue), slots: make(chan struct{}, slots)}
}

// Ticket is an admitted job. Release it exactly once.
type Ticket struct {
	g                 *Gate
	running, finished bool
}

// Admit takes a place without waiting, or returns ErrFull.
func (g *Gate) Admit() (*Ticket, error) {
	select {
	case g.tickets <- struct{}{}:
		g.admitted.Add(1)
		return &Ticket{g: g}, nil
	default:
		return nil, ErrFull
	}
}

// Run waits for a running slot until ctx is done; it returns ctx's error
// then, and the ticket keeps its waiting place until released.
func (t *Ticket) Run(ctx context.Context) error {
	select {
	case t.g.slots <- struct{}{}:
		t.running = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Finish gives back the slot (if running) once the job's work is done, so
// that a slow client reading the answer holds no slot; the place is kept
// until Release.
func (t *Ticket) Finish() {
	if t.running {
		t.finished = true
		t.g.finished.Add(1)
		<-t.g.slots
		t.running = false
	}
}

// Release gives back the slot (if still held) and the place.
func (t *Ticket) Release() {
	t.Finish()
	if t.finished {
		t.g.finished.Add(-1)
	}
	<-t.g.tickets
}

// Admitted counts the jobs admitted since the gate was made.
func (g *Gate) Admitted() uint64 { return g.admitted.Load() }

// Full reports whether every place is taken: Admit would fail now.
func (g *Gate) Full() bool { return len(g.tickets) == cap(g.tickets) }

// Running is the number of jobs holding a slot.
func (g *Gate) Running() int { return len(g.slots) }

// Waiting is the number of admitted jobs not yet running.
func (g *Gate) Waiting() int {
	return max(len(g.tickets)-len(g.slots)-int(g.finished.Load()), 0)
}
