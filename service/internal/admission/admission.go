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
	"sync"
	"sync/atomic"
	"time"

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
	// queued is the memory the admitted jobs not yet holding theirs will
	// need; at most memoryTurns budgets of it are admitted.
	queued atomic.Int64
	// freed is closed (and replaced) whenever a place is given back, to
	// wake the requests waiting at the door (WaitRoom).
	mu    sync.Mutex
	freed chan struct{}
	// times and work are the deadline-aware door's (deadline.go): the
	// recent service times, and the estimated service time (ns) of the
	// admitted jobs not done.
	times serviceTimes
	work  atomic.Int64
}

// New returns a gate with slots running places, queue waiting places and
// memory bytes for the jobs' estimated peaks.
func New(slots, queue int, memory int64) *Gate {
	return &Gate{tickets: make(chan struct{}, slots+queue), slots: make(chan struct{}, slots),
		memory: semaphore.NewWeighted(memory), memSize: memory, freed: make(chan struct{})}
}

// Ticket is an admitted job. Release it exactly once.
type Ticket struct {
	g                 *Gate
	cost              int64   // bytes of the memory budget the job needs
	work              float64 // its CPU against a plain thumbnail's (1)
	held              bool    // cost is taken
	queued            bool    // cost counts in the gate's queued memory
	running, finished bool
	service           time.Duration // estimated at admission
	inWork            bool          // service counts in the gate's work
	began             time.Time     // the slot was taken
	deadline          time.Time     // Run's; zero: none
}

// memoryTurns bounds the memory of the jobs admitted to wait: that many
// whole budgets. Jobs queue behind memory in arrival order, so beyond a
// few budgets' worth a newcomer would wait out its deadline (a 504 after
// holding a place for 10 s); it gets its 503 at once instead. Measured
// with 500 clients on a 7000x5000 PNG at 256 MiB, where one job takes the
// budget (docs/hardening.md, "Memory").
const memoryTurns = 8

// Admit takes a place without waiting for a job that needs cost bytes of
// the memory budget: ErrTooLarge when cost is more than the whole budget,
// ErrFull when every place is taken or the jobs waiting already need
// memoryTurns budgets.
func (g *Gate) Admit(cost int64) (*Ticket, error) { return g.admit(cost, 1) }

// admit is Admit for a job of work times a plain thumbnail's CPU.
func (g *Gate) admit(cost int64, work float64) (*Ticket, error) {
	cost = max(cost, 0)
	if cost > g.memSize {
		return nil, ErrTooLarge
	}
	if g.queued.Add(cost) > memoryTurns*g.memSize {
		g.queued.Add(-cost)
		return nil, ErrFull
	}
	select {
	case g.tickets <- struct{}{}:
		g.admitted.Add(1)
		t := &Ticket{g: g, cost: cost, work: max(work, 1), queued: true}
		t.counted()
		return t, nil
	default:
		g.queued.Add(-cost)
		return nil, ErrFull
	}
}

// dequeue takes the ticket's cost off the memory waiting to be taken.
func (t *Ticket) dequeue() {
	if t.queued {
		t.g.queued.Add(-t.cost)
		t.queued = false
		t.g.notify()
	}
}

// notify wakes the requests waiting for room (WaitRoom, AdmitWithin).
func (g *Gate) notify() {
	g.mu.Lock()
	close(g.freed)
	g.freed = make(chan struct{})
	g.mu.Unlock()
}

// changed is the channel notify closes next.
func (g *Gate) changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.freed
}

// AdmitWithin is Admit for a job of work times a plain thumbnail's CPU
// (memcost.Work; the deadline door estimates its service time from it),
// waiting up to wait (or ctx's end) for room when the gate is full:
// ErrFull once the wait has passed.
func (g *Gate) AdmitWithin(ctx context.Context, cost int64, work float64, wait time.Duration) (*Ticket, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		changed := g.changed()
		t, err := g.admit(cost, work)
		if !errors.Is(err, ErrFull) {
			return t, err
		}
		select {
		case <-changed:
		case <-timer.C:
			return g.admit(cost, work)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Run waits for the job's memory and then a running slot, until the last
// moment the job could start and still be done before ctx's deadline (its
// cost class's slowest recent service time before it): ErrLate then, and
// ErrLate too if the slot, once granted, came too late by the estimate of
// that moment (the slot is given back). Waiting until the deadline itself
// made the job a 504 that had held a place all along (measured: 9 of 17
// 504s at 500 clients in cells mode). ctx's own end returns its error.
// Either way the ticket keeps its waiting place (and any memory taken)
// until released.
func (t *Ticket) Run(ctx context.Context) error {
	wait := ctx
	if at, ok := t.latestStart(ctx); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, at)
		defer cancel()
	}
	// ended is the answer once the wait is over: ctx's end, else the
	// latest start passed.
	ended := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ErrLate
	}
	if !t.held {
		t.g.memoryWaiting.Add(1)
		err := t.g.memory.Acquire(wait, t.cost)
		t.g.memoryWaiting.Add(-1)
		if err != nil {
			return ended()
		}
		t.held = true
		t.dequeue()
		t.g.memUsed.Add(t.cost)
	}
	select {
	case t.g.slots <- struct{}{}:
		if t.late(ctx) {
			<-t.g.slots
			return ErrLate
		}
		t.running = true
		t.began = time.Now()
		t.deadline, _ = ctx.Deadline()
		return nil
	case <-wait.Done():
		return ended()
	}
}

// Finish gives back the slot (if running) once the job's work is done, so
// that a slow client reading the answer holds no slot; the place is kept
// until Release.
func (t *Ticket) Finish() {
	if t.running {
		// A job cut off by its deadline (a cell killed, an engine that
		// noticed) did not show how long it takes: not a service time.
		if now := time.Now(); t.deadline.IsZero() || now.Before(t.deadline) {
			t.g.times.record(t.cost, t.work, now.Sub(t.began))
		}
		t.uncounted()
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
	t.dequeue()
	t.uncounted()
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
	t.g.notify()
}

// WaitRoom waits until a place is free and a job admitted now would be
// done before ctx's deadline (Late, its cost not known yet), or until ctx
// is done or wait has passed, and reports whether there is room. It takes
// nothing: the caller still reads its source, then Admits (which may find
// the room taken). A request waiting here has had nothing of its upload
// read, so under overload the client waits on its connection (TCP
// backpressure) instead of being refused and sending again at once, and
// refusals come at most once per wait per client.
func (g *Gate) WaitRoom(ctx context.Context, wait time.Duration) bool {
	room := func() bool {
		if g.Full() {
			return false
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			return true
		}
		late, _ := g.Late(deadline, -1)
		return !late
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		freed := g.changed()
		if room() {
			return true
		}
		select {
		case <-freed:
		case <-timer.C:
			return room()
		case <-ctx.Done():
			return false
		}
	}
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
