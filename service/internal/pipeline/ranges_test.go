package pipeline

import (
	"bytes"
	"errors"
	"testing"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// countedAt holds what finding a video's ranges reads in the source
// budget until give, and fails a read the budget has no room for at
// once (spent), never waiting while it holds bytes.
func TestCountedAtHoldsItsReadsInTheBudget(t *testing.T) {
	budget := admission.NewBytes(100)
	c := &countedAt{r: bytes.NewReader(make([]byte, 1000)), budget: budget}
	buf := make([]byte, 60)
	if n, err := c.ReadAt(buf, 0); n != 60 || err != nil || budget.Used() != 60 {
		t.Fatalf("a read within the budget: %d, %v, %d bytes taken", n, err, budget.Used())
	}
	if n, err := c.ReadAt(buf, 60); n != 0 || !errors.Is(err, errPlanSpent) || !c.spent {
		t.Fatalf("a read past the budget: %d, %v, spent %v", n, err, c.spent)
	}
	if budget.Used() != 60 || c.n.Load() != 60 {
		t.Fatalf("after the refused read: %d bytes taken, %d counted", budget.Used(), c.n.Load())
	}
	c.give()
	if budget.Used() != 0 {
		t.Fatalf("%d bytes still taken after give", budget.Used())
	}
	// Counted only, without a budget.
	free := &countedAt{r: bytes.NewReader(make([]byte, 1000))}
	if n, err := free.ReadAt(make([]byte, 500), 0); n != 500 || err != nil || free.n.Load() != 500 {
		t.Fatalf("counted only: %d, %v", n, err)
	}
	free.give()
}
