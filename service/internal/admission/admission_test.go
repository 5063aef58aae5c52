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
	g := New(1, 2)
	var tickets []*Ticket
	for i := 0; i < 3; i++ {
		tk, err := g.Admit()
		if err != nil {
			t.Fatalf("admit %d: %v", i, err)
		}
		tickets = append(tickets, tk)
	}
	if _, err := g.Admit(); !errors.Is(err, ErrFull) {
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
	if _, err := g.Admit(); err != nil {
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
	g := New(1, 0)
	tk, _ := g.Admit()
	if _, err := g.Admit(); err == nil || g.Admitted() != 1 {
		t.Fatalf("admitted %d", g.Admitted())
	}
	tk.Release()
	g.Admit()
	if g.Admitted() != 2 {
		t.Fatalf("admitted %d", g.Admitted())
	}
}

// A finished job gives back its slot at once and its place at Release; it
// counts as neither running nor waiting in between.
func TestFinishFreesTheSlotAndKeepsThePlace(t *testing.T) {
	g := New(1, 0)
	tk, _ := g.Admit()
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
	next, _ := g.Admit()
	if err := next.Run(context.Background()); err != nil || g.Running() != 1 || g.Waiting() != 0 {
		t.Fatalf("the next job: %v, running %d, waiting %d", err, g.Running(), g.Waiting())
	}
	next.Release()
}
