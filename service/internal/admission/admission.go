// Package admission bounds work: a fixed number of jobs run at once and a
// fixed number wait; anyone beyond that is turned away at once instead of
// piling up (the pattern of imgproxy's workers and chi's ThrottleBacklog).
// A job also holds its estimated memory from a budget while it runs and
// until its answer is written, so the jobs in the works never need more
// memory than the process has.
package admission

import (
	"context"
	"errors"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrFull means every running slot and every waiting place is taken.
var ErrFull = errors.New("admission: queue full")

// ErrTooLarge means a job's memory is more than the whole budget: it could
// never run, however long it waited.
var ErrTooLarge = errors.New("admission: job larger than the memory budget")

// Gate admits up to slots running jobs plus queue waiting ones, and holds
// each job's memory within a budget.
type Gate struct {
	tickets  chan struct{} // one per admitted job, waiting, running or finished
	slots    chan struct{} // one per running job
	finished atomic.Int64  // jobs done with their slot, not yet released
	admitted atomic.Uint64
	// memory is taken in arrival order (a large job is not starved by
	// small ones behind it); memUsed mirrors it for the gauges.
	memory        *semaphore.Weighted
	memSize       int64
	memUsed       atomic.Int64
	memoryWaiting atomic.Int64
}

// New returns a gate with slots running places, queue waiting places and
// memory bytes for the jobs' estimated peaks.
func New(slots, queue int, memory int64) *Gate {
	return &Gate{tickets: make(chan struct{}, slots+queue), slots: make(chan struct{}, slots),
		memory: semaphore.NewWeighted(memory), memSize: memory}
}

// Ticket is an admitted job. Release it exactly once.
type Ticket struct {
	g                 *Gate
	cost              int64 // bytes of the memory budget the job needs
	held              bool  // cost is taken
	running, finished bool
}

// Admit takes a place without waiting for a job that needs cost bytes of
// the memory budget: ErrTooLarge when cost is more than the whole budget,
// ErrFull when every place is taken.
func (g *Gate) Admit(cost int64) (*Ticket, error) {
	if cost > g.memSize {
		return nil, ErrTooLarge
	}
	select {
	case g.tickets <- struct{}{}:
		g.admitted.Add(1)
		return &Ticket{g: g, cost: max(cost, 0)}, nil
	default:
		return nil, ErrFull
	}
}

// Run waits, until ctx is done, for the job's memory and then a running
// slot; it returns ctx's error then, and the ticket keeps its waiting place
// (and any memory taken) until released.
func (t *Ticket) Run(ctx context.Context) error {
	if !t.held {
		t.g.memoryWaiting.Add(1)
		err := t.g.memory.Acquire(ctx, t.cost)
		t.g.memoryWaiting.Add(-1)
		if err != nil {
			return err
		}
		t.held = true
		t.g.memUsed.Add(t.cost)
	}
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

// Release gives back the slot (if still held), the memory and the place.
// The memory is held until here, not Finish: the answer being written is
// still in memory.
func (t *Ticket) Release() {
	t.Finish()
	if t.finished {
		t.g.finished.Add(-1)
	}
	if t.held {
		t.g.memory.Release(t.cost)
		t.g.memUsed.Add(-t.cost)
		t.held = false
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

// Memory is the memory budget's size and the bytes taken now.
func (g *Gate) Memory() (size, used int64) { return g.memSize, g.memUsed.Load() }

// MemoryWaiting is the number of admitted jobs waiting for memory.
func (g *Gate) MemoryWaiting() int { return int(g.memoryWaiting.Load()) }
