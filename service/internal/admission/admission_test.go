package admission

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestGateAdmitsSlotsPlusQueueThenRefuses(t *testing.T) {
	g := New(1, 2, 1<<30)
	var tickets []*Ticket
	for i := 0; i < 3; i++ {
		tk, err := g.Admit(0)
		if err != nil {
			t.Fatalf("admit %d: %v", i, err)
		}
		tickets = append(tickets, tk)
	}
	if _, err := g.Admit(0); !errors.Is(err, ErrFull) {
		t.Fatalf("4th admit: got %v, want ErrFull", err)
	}
	if err := tickets[0].Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.Running() != 1 || g.Waiting() != 2 {
		t.Fatalf("running %d waiting %d, want 1 and 2", g.Running(), g.Waiting())
	}
	// The second ticket cannot run while the first holds the only slot.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := tickets[1].Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run while busy: got %v, want deadline exceeded", err)
	}
	tickets[0].Release()
	if err := tickets[1].Run(context.Background()); err != nil {
		t.Fatalf("run after release: %v", err)
	}
	tickets[1].Release()
	tickets[2].Release()
	if g.Running() != 0 || g.Waiting() != 0 {
		t.Fatalf("after releases: running %d waiting %d", g.Running(), g.Waiting())
	}
	if _, err := g.Admit(0); err != nil {
		t.Fatalf("admit after releases: %v", err)
	}
}

func TestBytesBudget(t *testing.T) {
	b := NewBytes(10)
	r1 := b.Reader(strings.NewReader("123456"))
	if got, err := io.ReadAll(r1); err != nil || string(got) != "123456" || b.Used() != 6 {
		t.Fatalf("%q %v used %d", got, err, b.Used())
	}
	r2 := b.Reader(strings.NewReader("abcdef"))
	if _, err := io.ReadAll(r2); !errors.Is(err, ErrNoRoom) {
		t.Fatalf("over budget: %v", err)
	}
	r2.Close()
	r1.Close()
	if b.Used() != 0 {
		t.Fatalf("used %d after close", b.Used())
	}
	if got, err := io.ReadAll(b.Reader(strings.NewReader("0123456789"))); err != nil || len(got) != 10 {
		t.Fatalf("exactly the budget: %v", err)
	}
}

func TestAdmittedCounts(t *testing.T) {
	g := New(1, 0, 1<<30)
	tk, _ := g.Admit(0)
	if _, err := g.Admit(0); err == nil || g.Admitted() != 1 {
		t.Fatalf("admitted %d", g.Admitted())
	}
	tk.Release()
	g.Admit(0)
	if g.Admitted() != 2 {
		t.Fatalf("admitted %d", g.Admitted())
	}
}

// A finished job gives back its slot at once and its place at Release; it
// counts as neither running nor waiting in between.
func TestFinishFreesTheSlotAndKeepsThePlace(t *testing.T) {
	g := New(1, 0, 1<<30)
	tk, _ := g.Admit(0)
	if err := tk.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	tk.Finish()
	if g.Running() != 0 || g.Waiting() != 0 || !g.Full() {
		t.Fatalf("after Finish: running %d, waiting %d, full %v", g.Running(), g.Waiting(), g.Full())
	}
	tk.Release()
	if g.Full() || g.Waiting() != 0 {
		t.Fatalf("after Release: full %v, waiting %d", g.Full(), g.Waiting())
	}
	next, _ := g.Admit(0)
	if err := next.Run(context.Background()); err != nil || g.Running() != 1 || g.Waiting() != 0 {
		t.Fatalf("the next job: %v, running %d, waiting %d", err, g.Running(), g.Waiting())
	}
	next.Release()
}

// A job larger than the whole memory budget is refused at admission,
// before it takes a place; a job that fits waits for memory in arrival
// order, gives up at its deadline, and gets memory back on Release.
func TestMemoryBudget(t *testing.T) {
	g := New(4, 4, 100)
	if _, err := g.Admit(101); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Admit(101) of a 100-byte budget: %v, want ErrTooLarge", err)
	}
	if g.Admitted() != 0 {
		t.Fatal("a refused job was counted as admitted")
	}
	big, _ := g.Admit(70)
	if err := big.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if size, used := g.Memory(); size != 100 || used != 70 {
		t.Fatalf("Memory() = %d, %d; want 100, 70", size, used)
	}
	// 40 more does not fit beside 70: the job waits, then its deadline passes.
	late, _ := g.Admit(40)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := late.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run beyond the budget: %v, want the deadline", err)
	}
	late.Release()
	if _, used := g.Memory(); used != 70 {
		t.Fatalf("a job that never got memory gave some back: used %d", used)
	}
	// Waiting: it runs once the big job is released.
	next, _ := g.Admit(40)
	done := make(chan error)
	go func() { done <- next.Run(context.Background()) }()
	for g.MemoryWaiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	big.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The memory is held until Release, not Finish: the answer is in memory.
	next.Finish()
	if _, used := g.Memory(); used != 40 {
		t.Fatalf("after Finish: used %d, want 40 (held until Release)", used)
	}
	next.Release()
	if _, used := g.Memory(); used != 0 {
		t.Fatalf("after every Release: used %d", used)
	}
}

// WaitRoom waits at the door while every place is taken: it gives up after
// its wait (or when ctx ends), and returns as soon as a place is released.
func TestWaitRoom(t *testing.T) {
	g := New(1, 0, 1<<30)
	if !g.WaitRoom(context.Background(), time.Millisecond) {
		t.Fatal("an empty gate has no room")
	}
	held, _ := g.Admit(0)
	start := time.Now()
	if g.WaitRoom(context.Background(), 30*time.Millisecond) || time.Since(start) < 30*time.Millisecond {
		t.Fatal("a full gate had room, or the wait was cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if g.WaitRoom(ctx, time.Minute) {
		t.Fatal("room reported to a request that left")
	}
	go func() { time.Sleep(20 * time.Millisecond); held.Release() }()
	start = time.Now()
	if !g.WaitRoom(context.Background(), time.Minute) || time.Since(start) > 30*time.Second {
		t.Fatal("a released place did not end the wait")
	}
}

// Jobs waiting for memory are admitted up to memoryTurns budgets of it:
// beyond, a newcomer would only wait out its deadline.
func TestQueuedMemoryIsBounded(t *testing.T) {
	g := New(1, 1000, 100)
	var tickets []*Ticket
	for range memoryTurns {
		tk, err := g.Admit(100)
		if err != nil {
			t.Fatalf("admitting %d budgets: %v", len(tickets)+1, err)
		}
		tickets = append(tickets, tk)
	}
	if _, err := g.Admit(1); !errors.Is(err, ErrFull) {
		t.Fatalf("past %d budgets waiting: %v, want ErrFull", memoryTurns, err)
	}
	// One takes its memory: it no longer counts as waiting.
	if err := tickets[0].Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	next, err := g.Admit(100)
	if err != nil {
		t.Fatalf("after one took its memory: %v", err)
	}
	next.Release() // released before it ever ran: its queued memory is given back
	for _, tk := range tickets {
		tk.Release()
	}
	if g.queued.Load() != 0 {
		t.Fatalf("queued memory left: %d", g.queued.Load())
	}
}

// AdmitWithin waits for room (a place, or queued memory taken) up to its
// wait, then refuses.
func TestAdmitWithin(t *testing.T) {
	g := New(1, 0, 100)
	held, _ := g.Admit(0)
	if _, err := g.AdmitWithin(context.Background(), 0, 1, 20*time.Millisecond); !errors.Is(err, ErrFull) {
		t.Fatalf("full gate after the wait: %v", err)
	}
	go func() { time.Sleep(20 * time.Millisecond); held.Release() }()
	tk, err := g.AdmitWithin(context.Background(), 0, 1, time.Minute)
	if err != nil {
		t.Fatalf("a place released during the wait: %v", err)
	}
	tk.Release()
	if _, err := g.AdmitWithin(context.Background(), 101, 1, time.Minute); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a job over the budget: %v, want ErrTooLarge at once", err)
	}
}

// A negative reservation (a length nobody declared) is refused: never a
// panic of the semaphore, never bytes taken.
func TestBytesReserveNegative(t *testing.T) {
	b := NewBytes(10)
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("Reserve(-1) panicked: %v", v)
		}
	}()
	if _, err := b.Reserve(context.Background(), strings.NewReader("x"), -1); err == nil {
		t.Fatal("Reserve(-1) accepted")
	}
	if b.Used() != 0 {
		t.Fatalf("used %d after a refused reservation", b.Used())
	}
}

// WithHeld: past n bodies reserved, the next waits (its bytes free or
// not) until one is given back, or gives up with its context; a body that
// could not get its bytes gives its place back; bodies of unknown length
// (Reader) count only their bytes; the view's bytes are the budget's.
func TestBytesHeldBoundsBodies(t *testing.T) {
	budget := NewBytes(1000)
	b := budget.WithHeld(2)
	r1, err1 := b.Reserve(context.Background(), strings.NewReader("a"), 10)
	r2, err2 := b.Reserve(context.Background(), strings.NewReader("b"), 10)
	if err1 != nil || err2 != nil {
		t.Fatalf("two bodies: %v, %v", err1, err2)
	}
	if budget.Used() != 20 {
		t.Fatalf("the budget's bytes used: %d, want the view's 20", budget.Used())
	}
	other, err := budget.Reserve(context.Background(), strings.NewReader("x"), 10)
	if err != nil {
		t.Fatalf("a body outside the view, its places taken: %v", err)
	}
	other.Close()
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Reserve(short, strings.NewReader("c"), 10); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third body with 980 bytes free: %v, want it to wait", err)
	}
	got := make(chan error, 1)
	go func() {
		r3, err := b.Reserve(context.Background(), strings.NewReader("c"), 10)
		if err == nil {
			r3.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the third body went ahead of a place: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r1.Close()
	if err := <-got; err != nil {
		t.Fatalf("the third body once a place is free: %v", err)
	}
	// Over the bytes: the place taken is given back.
	if _, err := b.Reserve(short, strings.NewReader("d"), 995); err == nil {
		t.Fatal("995 bytes with 990 free")
	}
	wait, cancelWait := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancelWait()
	r4, err := b.Reserve(wait, strings.NewReader("e"), 10)
	if err != nil {
		t.Fatalf("a body after one refused its bytes: %v", err)
	}
	if rd := b.Reader(strings.NewReader("unknown")); func() error { _, err := io.ReadAll(rd); rd.Close(); return err }() != nil {
		t.Fatal("a body of unknown length with every place taken")
	}
	r2.Close()
	r4.Close()
	if b.Used() != 0 {
		t.Fatalf("used %d after closing everything", b.Used())
	}
}
