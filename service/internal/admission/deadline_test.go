package admission

import (
	"context"
	"errors"
	"testing"
	"time"
)

const mib = 1 << 20

func TestServiceTimeIsTheClassMedian(t *testing.T) {
	var s serviceTimes
	if got := s.estimate(5*mib, 1); got != 0 {
		t.Fatalf("no history: %v, want 0 (nothing refused)", got)
	}
	s.record(5*mib, 1, 3*time.Second)
	s.record(5*mib, 1, 3*time.Second)
	if got := s.estimate(5*mib, 1); got != 0 {
		t.Fatalf("two jobs measured: %v, want 0 (nothing refused yet)", got)
	}
	s = serviceTimes{}
	// A burst of slow jobs (as while a wave of uploads is read) does not
	// move the median of a class that has seen more fast ones.
	for _, ms := range []int{70, 70, 400, 70, 400, 70, 70, 70, 70} {
		s.record(5*mib, 1, time.Duration(ms)*time.Millisecond)
	}
	for range measured {
		s.record(300*mib, 1, 2*time.Second)
	}
	s.record(40*mib, 1, time.Hour) // one job: its class has no estimate of its own
	if got := s.estimate(6*mib, 1); got != 70*time.Millisecond {
		t.Fatalf("a 6 MiB job (the 5 MiB one's class): %v, want 70ms", got)
	}
	if got := s.estimate(260*mib, 1); got != 2*time.Second {
		t.Fatalf("a 260 MiB job: %v, want its class's 2s", got)
	}
	if got := s.estimate(40*mib, 1); got != 70*time.Millisecond {
		t.Fatalf("a class not seen: %v, want every job's median, 70ms", got)
	}
	if got := s.estimate(-1, 1); got != 70*time.Millisecond {
		t.Fatalf("a cost not known: %v, want every job's median", got)
	}
	// A lasting change takes over within half the window.
	for range recent/2 + 1 {
		s.record(5*mib, 1, time.Second)
	}
	if got := s.estimate(5*mib, 1); got != time.Second {
		t.Fatalf("after a lasting change: %v, want 1s", got)
	}
}

// ran puts measured jobs of cost through a slot, each taking d, so the
// gate has a service time for its class.
func ran(t *testing.T, g *Gate, cost int64, d time.Duration) {
	t.Helper()
	for range measured {
		tk, err := g.Admit(cost)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		tk.began = tk.began.Add(-d) // as if it had run d
		tk.Release()
	}
}

// A job cut off by its deadline is not a service time: a hung job killed
// at its deadline does not make the next ones late.
func TestJobPastItsDeadlineIsNotMeasured(t *testing.T) {
	g := New(1, 1, 1<<30)
	ran(t, g, mib, 100*time.Millisecond)
	for range recent {
		tk, err := g.Admit(mib)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		if err := tk.Run(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		tk.deadline = time.Now().Add(-time.Millisecond) // it ran past its deadline
		tk.began = tk.began.Add(-time.Minute)
		tk.Release()
	}
	if got := g.times.estimate(mib, 1); got < 100*time.Millisecond || got > time.Second {
		t.Fatalf("after jobs cut off by their deadline: %v, want the finished jobs' 100ms", got)
	}
}

func TestLateCountsTheWorkAdmittedAhead(t *testing.T) {
	g := New(2, 100, 1<<30)
	now := time.Now()
	if late, _ := g.Late(now.Add(time.Millisecond), mib); late {
		t.Fatal("late without any service time measured")
	}
	ran(t, g, mib, time.Second)
	if late, _ := g.Late(now.Add(2*time.Second), mib); late {
		t.Fatal("an empty queue and 1 s of service: late for a 2 s deadline")
	}
	var held []*Ticket
	for range 6 { // 6 s of work ahead, 2 slots: 3 s of wait
		tk, err := g.Admit(mib)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	late, wait := g.Late(time.Now().Add(3500*time.Millisecond), mib)
	if !late || wait < 2900*time.Millisecond || wait > 3100*time.Millisecond {
		t.Fatalf("6 s of work ahead on 2 slots: late %v, wait %v; want late, 3 s", late, wait)
	}
	if late, _ := g.Late(time.Now().Add(5*time.Second), mib); late {
		t.Fatal("3 s of wait and 1 s of service: late for a 5 s deadline")
	}
	// A job whose memory leaves room for one at a time waits for all of it.
	if late, wait := g.Late(time.Now().Add(5*time.Second), 600*mib); !late || wait < 5*time.Second {
		t.Fatalf("a job that runs alone: late %v, wait %v; want late, 6 s", late, wait)
	}
	for _, tk := range held {
		tk.Release()
	}
	if late, wait := g.Late(time.Now().Add(2*time.Second), mib); late || wait != 0 {
		t.Fatalf("after the queue drained: late %v, wait %v", late, wait)
	}
}

func TestRunDoesNotStartAJobThatWouldBeLate(t *testing.T) {
	g := New(1, 1, 1<<30)
	ran(t, g, mib, time.Second)
	tk, err := g.Admit(mib)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := tk.Run(ctx); !errors.Is(err, ErrLate) {
		t.Fatalf("200 ms left for a 1 s job: %v, want ErrLate", err)
	}
	if g.Running() != 0 {
		t.Fatal("a job refused as late kept its slot")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tk.Run(ctx); err != nil {
		t.Fatalf("10 s left for a 1 s job: %v", err)
	}
}

func TestWaitRoomWaitsUntilTheQueueWouldBeOnTime(t *testing.T) {
	g := New(1, 10, 1<<30)
	ran(t, g, mib, time.Second)
	held, err := g.Admit(mib) // 1 s of work ahead
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if g.WaitRoom(ctx, 20*time.Millisecond) {
		t.Fatal("room with 1 s of wait and 1 s of service for 1.5 s")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		held.Release()
	}()
	if !g.WaitRoom(ctx, time.Second) {
		t.Fatal("no room once the work ahead was done")
	}
}

// The decision at the slot, on a fixed clock: a job may start while its
// deadline is at least its class's slowest recent service time away.
func TestStartDecision(t *testing.T) {
	var s serviceTimes
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	deadline := t0.Add(10 * time.Second)
	if _, ok := latestStart(deadline, true, s.startBudget(mib, 1)); ok {
		t.Fatal("a latest start before any job was measured")
	}
	for _, ms := range []int{100, 100, 900, 100, 100} {
		s.record(mib, 1, time.Duration(ms)*time.Millisecond)
	}
	for range measured {
		s.record(300*mib, 1, 3*time.Second)
	}
	if got := s.estimate(mib, 1); got != 100*time.Millisecond {
		t.Fatalf("the class's median: %v, want 100ms", got)
	}
	if got := s.startBudget(mib, 1); got != 900*time.Millisecond {
		t.Fatalf("the class's start budget: %v, want its slowest, 900ms", got)
	}
	if got := s.startBudget(20*mib, 1); got != 3*time.Second {
		t.Fatalf("a class not seen: %v, want every job's slowest, 3s", got)
	}
	for _, c := range []struct {
		name        string
		now         time.Time
		hasDeadline bool
		budget      time.Duration
		late        bool
	}{
		{"plenty of time", t0, true, 900 * time.Millisecond, false},
		{"exactly the budget left", deadline.Add(-900 * time.Millisecond), true, 900 * time.Millisecond, false},
		{"a millisecond short", deadline.Add(-899 * time.Millisecond), true, 900 * time.Millisecond, true},
		{"the median left, not the slowest", deadline.Add(-100 * time.Millisecond), true, s.startBudget(mib, 1), true},
		{"past the deadline", deadline.Add(time.Second), true, 900 * time.Millisecond, true},
		{"no deadline", deadline.Add(time.Hour), false, 900 * time.Millisecond, false},
		{"nothing measured", deadline.Add(-time.Millisecond), true, 0, false},
	} {
		at, ok := latestStart(deadline, c.hasDeadline, c.budget)
		if got := startsLate(c.now, at, ok); got != c.late {
			t.Errorf("%s: late %v, want %v", c.name, got, c.late)
		}
	}
}

// A job waiting for its slot is refused at its latest start (ErrLate, a
// 503 with nothing spent), not left to wait until its deadline (a 504);
// the same for one waiting for memory.
func TestRunStopsWaitingAtTheLatestStart(t *testing.T) {
	for _, c := range []struct {
		name  string
		slots int
		mem   int64
	}{{"for a slot", 1, 1 << 30}, {"for memory", 2, mib}} {
		t.Run(c.name, func(t *testing.T) {
			g := New(c.slots, 2, c.mem)
			ran(t, g, mib, 300*time.Millisecond)
			holder, err := g.Admit(mib)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Release()
			// It holds the one slot, or the whole memory budget.
			if err := holder.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			tk, err := g.Admit(mib)
			if err != nil {
				t.Fatal(err)
			}
			defer tk.Release()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			began := time.Now()
			err = tk.Run(ctx)
			if !errors.Is(err, ErrLate) {
				t.Fatalf("waiting past its latest start: %v, want ErrLate", err)
			}
			if took := time.Since(began); took < 1500*time.Millisecond || took > 1900*time.Millisecond {
				t.Fatalf("refused after %v, want at its latest start, 1.7 s (2 s less the 300 ms job)", took)
			}
			if ctx.Err() != nil {
				t.Fatal("refused only at the deadline")
			}
		})
	}
	// The client leaving is not a late start: its own error.
	g := New(1, 2, 1<<30)
	ran(t, g, mib, 300*time.Millisecond)
	holder, _ := g.Admit(mib)
	defer holder.Release()
	if err := holder.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	tk, _ := g.Admit(mib)
	defer tk.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := tk.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("the client left while waiting: %v, want context.Canceled", err)
	}
}

// A job's work (a filter's or a trim's CPU, which its memory does not
// show) is a class of its own: before its class is measured, its estimate
// is every job's median times its work; once measured, its own.
func TestServiceTimesByWork(t *testing.T) {
	var s serviceTimes
	for range 5 {
		s.record(5*mib, 1, 100*time.Millisecond)
	}
	if got := s.estimate(5*mib, 1); got != 100*time.Millisecond {
		t.Errorf("plain: %v", got)
	}
	if got := s.estimate(5*mib, 5.3); got != 530*time.Millisecond {
		t.Errorf("blur, its class unmeasured: %v, want the median times 5.3", got)
	}
	if got := s.startBudget(5*mib, 5.3); got != 530*time.Millisecond {
		t.Errorf("blur's start budget, unmeasured: %v", got)
	}
	for range 3 {
		s.record(5*mib, 5.3, 900*time.Millisecond)
	}
	if got := s.estimate(5*mib, 5.3); got != 900*time.Millisecond {
		t.Errorf("blur, measured: %v, want its own 900ms", got)
	}
	if got := s.estimate(5*mib, 1); got != 100*time.Millisecond {
		t.Errorf("plain after blurs: %v, want 100ms", got)
	}
}
