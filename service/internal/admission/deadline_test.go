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
	if got := s.estimate(5 * mib); got != 0 {
		t.Fatalf("no history: %v, want 0 (nothing refused)", got)
	}
	s.record(5*mib, 3*time.Second)
	s.record(5*mib, 3*time.Second)
	if got := s.estimate(5 * mib); got != 0 {
		t.Fatalf("two jobs measured: %v, want 0 (nothing refused yet)", got)
	}
	s = serviceTimes{}
	// A burst of slow jobs (as while a wave of uploads is read) does not
	// move the median of a class that has seen more fast ones.
	for _, ms := range []int{70, 70, 400, 70, 400, 70, 70, 70, 70} {
		s.record(5*mib, time.Duration(ms)*time.Millisecond)
	}
	for range measured {
		s.record(300*mib, 2*time.Second)
	}
	s.record(40*mib, time.Hour) // one job: its class has no estimate of its own
	if got := s.estimate(6 * mib); got != 70*time.Millisecond {
		t.Fatalf("a 6 MiB job (the 5 MiB one's class): %v, want 70ms", got)
	}
	if got := s.estimate(260 * mib); got != 2*time.Second {
		t.Fatalf("a 260 MiB job: %v, want its class's 2s", got)
	}
	if got := s.estimate(40 * mib); got != 70*time.Millisecond {
		t.Fatalf("a class not seen: %v, want every job's median, 70ms", got)
	}
	if got := s.estimate(-1); got != 70*time.Millisecond {
		t.Fatalf("a cost not known: %v, want every job's median", got)
	}
	// A lasting change takes over within half the window.
	for range recent/2 + 1 {
		s.record(5*mib, time.Second)
	}
	if got := s.estimate(5 * mib); got != time.Second {
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
	if got := g.times.estimate(mib); got < 100*time.Millisecond || got > time.Second {
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
