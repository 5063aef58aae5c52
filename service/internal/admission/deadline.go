package admission

import (
	"context"
	"errors"
	"math/bits"
	"slices"
	"sync"
	"time"
)

// The deadline-aware door. A request is refused before it costs CPU when
// the work already admitted (and the sources being read to join it) would
// keep it waiting past its deadline: an estimate of the queue's wait plus
// its own service time, from the service times of the recent jobs of its
// cost class. Without that, a closed-loop crowd fills a long queue whose
// last jobs run, or wait, until their deadline and answer 504: CPU and
// uploads spent on answers nobody gets (docs/hardening.md, "Overload:
// the deadline-aware door").

// ErrLate means the job would not be done within its deadline: the queue's
// estimated wait and its own service time outlast it.
var ErrLate = errors.New("admission: the queue would outlast the deadline")

// recent is how many service times a cost class remembers: its estimate is
// their median, which a few jobs slowed by a burst of uploads (measured:
// 400 ms in their slot against 70 ms after) do not move, and which follows
// a lasting change within recent/2 jobs.
const recent = 15

// ring is a cost class's recent service times.
type ring struct {
	d       [recent]time.Duration
	n, next int
}

func (r *ring) add(d time.Duration) {
	r.d[r.next] = d
	r.next = (r.next + 1) % recent
	r.n = min(r.n+1, recent)
}

// measured is how many service times an estimate needs: one job held long
// (a test's held slot; the first jobs, while a wave of uploads is read)
// does not make the next ones late.
const measured = 3

// slowest is the longest of the recent service times (0 before measured
// jobs): what a job about to start is held to, not the median. A job
// started with the median's time left finishes after its deadline as often
// as not, and a started job that misses its deadline is a 504 whose CPU
// was spent for nothing (measured, 500 clients, cells: 8 of 17 504s were
// jobs started in time by the median and done after the deadline).
func (r *ring) slowest() time.Duration {
	if r.n < measured {
		return 0
	}
	return slices.Max(r.d[:r.n])
}

func (r *ring) median() time.Duration {
	if r.n < measured {
		return 0
	}
	s := slices.Clone(r.d[:r.n])
	slices.Sort(s)
	return s[r.n/2]
}

// serviceTimes are the recent jobs' times in a slot, by cost class (the
// estimated memory's power of two in MiB: it follows the pixels decoded and
// written, which is what a job's time follows) and all together.
type serviceTimes struct {
	mu      sync.Mutex
	byClass map[int]*ring
	all     ring
}

// costClass is a job's class: its memory's power of two in MiB, and its
// work's (memcost.Work: 1 for a plain thumbnail, more for a filter or a
// trim, whose CPU the memory does not show).
func costClass(cost int64, work float64) int {
	return bits.Len64(uint64(max(cost, 0))>>20) | bits.Len64(uint64(max(work, 1)))<<8
}

func (s *serviceTimes) record(cost int64, work float64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byClass == nil {
		s.byClass = map[int]*ring{}
	}
	class := costClass(cost, work)
	r := s.byClass[class]
	if r == nil {
		r = &ring{}
		s.byClass[class] = r
	}
	r.add(d)
	s.all.add(d)
}

// estimate is a job's service time: its class's median, else (a class
// with fewer than measured jobs, or cost < 0: not known yet) the median of
// every recent job times the job's work; 0 before measured jobs have run,
// when nothing is refused.
func (s *serviceTimes) estimate(cost int64, work float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, scale := s.ring(cost, work)
	return time.Duration(float64(r.median()) * scale)
}

// startBudget is the time a job of cost must have left when it starts:
// the slowest recent service time of its class (or of every job, as in
// estimate); 0 before measured jobs, when every job may start.
func (s *serviceTimes) startBudget(cost int64, work float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, scale := s.ring(cost, work)
	return time.Duration(float64(r.slowest()) * scale)
}

// ring is the service times an estimate for cost and work reads, and the
// factor to scale them by: its class's once measured jobs ran in it, else
// every job's times the work. s.mu is held.
func (s *serviceTimes) ring(cost int64, work float64) (*ring, float64) {
	if r := s.byClass[costClass(cost, work)]; cost >= 0 && r != nil && r.n >= measured {
		return r, 1
	}
	return &s.all, max(work, 1)
}

// latestStart is the last moment a job holding budget of service time may
// start and still be done by deadline; ok is false when there is no
// deadline or no budget yet (the job may start whenever its slot comes).
func latestStart(deadline time.Time, hasDeadline bool, budget time.Duration) (at time.Time, ok bool) {
	if !hasDeadline || budget <= 0 {
		return time.Time{}, false
	}
	return deadline.Add(-budget), true
}

// startsLate reports whether a job starting at now would pass its latest
// start: it is then refused (ErrLate) instead of started.
func startsLate(now, latest time.Time, ok bool) bool { return ok && now.After(latest) }

// Late reports whether a job of cost (negative: not known yet, as at the
// door before its source is read) admitted now would not be done by
// deadline, and its estimated wait for a slot (the hint of a refusal's
// Retry-After). The wait is the estimated service time of the jobs admitted
// and not done, shared among the jobs that can run at once: the slots,
// fewer when the job's memory leaves room for fewer. The requests still
// reading their source are not counted: identical uploads merge into one
// job once read, and counting each as a job refused most of a crowd
// sending the same photo (measured: 2,464 refusals and 17.7 thumbnails/s
// against none and 86.3/s).
func (g *Gate) Late(deadline time.Time, cost int64) (late bool, wait time.Duration) {
	service := g.times.estimate(cost, 1)
	if service == 0 {
		return false, 0
	}
	ahead := time.Duration(g.work.Load())
	parallel := int64(cap(g.slots))
	if cost > 0 {
		parallel = min(parallel, max(g.memSize/cost, 1))
	}
	wait = ahead / time.Duration(parallel)
	return time.Now().Add(wait + service).After(deadline), wait
}

// Service is the ticket's estimated service time, taken when it was
// admitted.
func (t *Ticket) Service() time.Duration { return t.service }

// latestStart is the last moment the job may start and be done before
// ctx's deadline by its class's slowest recent service time, as known now.
func (t *Ticket) latestStart(ctx context.Context) (time.Time, bool) {
	deadline, ok := ctx.Deadline()
	return latestStart(deadline, ok, t.g.times.startBudget(t.cost, t.work))
}

// late reports whether the job, about to start, would not be done before
// ctx's deadline by its class's slowest recent service time: it is then
// not started.
func (t *Ticket) late(ctx context.Context) bool {
	at, ok := t.latestStart(ctx)
	return startsLate(time.Now(), at, ok)
}

// counted adds the ticket's estimated service time to the gate's work
// ahead; uncounted takes it off, once.
func (t *Ticket) counted() {
	t.service = t.g.times.estimate(t.cost, t.work)
	t.g.work.Add(int64(t.service))
	t.inWork = true
}

func (t *Ticket) uncounted() {
	if t.inWork {
		t.g.work.Add(-int64(t.service))
		t.inWork = false
	}
}
