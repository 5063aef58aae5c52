package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/results"
)

func background() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func noPanic(v any) error { panic(v) }

func TestFlightIsSharedByItsJoiners(t *testing.T) {
	f := newFlights()
	release := make(chan struct{})
	want := &results.Entry{Body: []byte("x")}
	job := func(context.Context) (*results.Entry, error) { <-release; return want, nil }
	a, leader := f.join("k", true, background, job, noPanic)
	b, second := f.join("k", true, background, job, noPanic)
	if !leader || second || a != b || a.waiters != 2 {
		t.Fatalf("leader %t, second %t, same %t, waiters %d", leader, second, a == b, a.waiters)
	}
	close(release)
	<-a.done
	if a.entry != want || a.err != nil || len(f.m) != 0 {
		t.Fatalf("entry %v, err %v, %d in flight", a.entry, a.err, len(f.m))
	}
}

func TestFlightPanicIsItsWaitersError(t *testing.T) {
	f := newFlights()
	answer := errors.New("the engine error")
	fl, _ := f.join("k", true, background, func(context.Context) (*results.Entry, error) { panic("a bug") }, func(v any) error {
		if v != "a bug" {
			t.Errorf("recovered %v", v)
		}
		return answer
	})
	<-fl.done
	if fl.err != answer || fl.entry != nil || len(f.m) != 0 {
		t.Fatalf("err %v, entry %v, %d in flight", fl.err, fl.entry, len(f.m))
	}
}

// The last waiter to leave cancels a job no one keeps, and a new request
// starts afresh; a job whose answer is kept runs on.
func TestFlightLastWaiterLeaving(t *testing.T) {
	for _, keeps := range []bool{false, true} {
		f := newFlights()
		ended := make(chan error, 1)
		job := func(ctx context.Context) (*results.Entry, error) {
			select {
			case <-ctx.Done():
				ended <- ctx.Err()
			case <-time.After(time.Second):
				ended <- nil
			}
			return nil, ctx.Err()
		}
		fl, _ := f.join("k", keeps, background, job, noPanic)
		f.join("k", keeps, background, job, noPanic)
		f.leave("k", fl)
		select {
		case err := <-ended:
			t.Fatalf("keeps %t: one of two waiters left and the job ended (%v)", keeps, err)
		case <-time.After(20 * time.Millisecond):
		}
		f.leave("k", fl)
		err := <-ended
		switch {
		case !keeps && !errors.Is(err, context.Canceled):
			t.Errorf("no one keeps the answer, every waiter left: the job ended with %v, want cancelled", err)
		case keeps && err != nil:
			t.Errorf("the answer is kept: the job was cancelled (%v)", err)
		}
		if !keeps {
			if next, leader := f.join("k", keeps, background, func(context.Context) (*results.Entry, error) { return nil, nil }, noPanic); !leader || next == fl {
				t.Errorf("a request after the cancel joined the cancelled job")
			}
		}
		<-fl.done
	}
}
