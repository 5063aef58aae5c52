package cellpool

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/celltest"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The test binary re-executed by celltest.Spec is a fake cell whose engine
// the job's width commands.
func TestMain(m *testing.M) {
	if os.Getenv(armsCellEnv) == "1" {
		os.Exit(armsCell())
	}
	celltest.Main()
	os.Exit(m.Run())
}

const ok = 10 // a width the fake engine answers with a PNG

// Safety bounds only: a loaded 2-core machine takes far less.
const waitLong = 30 * time.Second

func startPool(t *testing.T, cells, spares, maxJobs int, maxRSS int64) *Pool {
	t.Helper()
	p := New(Config{Spec: *celltest.Spec("serve"), Cells: cells, Spares: spares, MaxJobs: maxJobs, MaxRSS: maxRSS,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitFor(t, "the pool to fill", func() bool { s := p.Stats(); return len(s.PIDs) == cells+spares && s.Starting == 0 })
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func thumbnail(p *Pool, w int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := p.Run(ctx, thumbjob.Source{Bytes: []byte("source")}, thumbjob.Job{Options: celltest.Job(w)})
	return err
}

func TestSparesAreStartedAhead(t *testing.T) {
	p := startPool(t, 2, 1, 1000, 1<<30)
	s := p.Stats()
	if s.Started != 3 || s.Idle != 3 || s.Busy != 0 {
		t.Fatalf("%+v", s)
	}
	for _, l := range p.Layers() {
		t.Errorf("the fake cell reports no sandbox, got %+v", l)
	}
}

func TestCellIsReplacedAfterItsJobs(t *testing.T) {
	p := startPool(t, 1, 1, 3, 1<<30)
	first := p.Stats().PIDs
	for i := 0; i < 6; i++ {
		if err := thumbnail(p, ok, waitLong); err != nil {
			t.Fatal(err)
		}
	}
	// Six jobs round two cells: each served three and was replaced.
	waitFor(t, "two replacements", func() bool { s := p.Stats(); return s.Exits[ExitJobs] == 2 && len(s.PIDs) == 2 })
	for _, pid := range p.Stats().PIDs {
		if slices.Contains(first, pid) {
			t.Errorf("cell %d is still there after its jobs", pid)
		}
	}
	for _, pid := range first {
		waitFor(t, "the old cells to be reaped", func() bool { return !alive(pid) })
	}
}

func TestCellIsReplacedOverItsRSSBound(t *testing.T) {
	p := startPool(t, 1, 0, 1000, 1) // every cell is over one byte
	if err := thumbnail(p, ok, waitLong); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the replacement", func() bool { s := p.Stats(); return s.Exits[ExitRSS] == 1 && s.Idle == 1 })
}

func TestCrashCostsOnlyItsJob(t *testing.T) {
	p := startPool(t, 2, 1, 1000, 1<<30)
	err := thumbnail(p, celltest.Segfault, waitLong)
	var crash *cell.CrashError
	if !errors.As(err, &crash) || crash.Exit != "signal SIGSEGV" {
		t.Fatalf("got %v, want a SIGSEGV crash", err)
	}
	for i := 0; i < 10; i++ {
		if err := thumbnail(p, ok, waitLong); err != nil {
			t.Fatalf("job %d after the crash: %v", i, err)
		}
	}
	waitFor(t, "the replacement", func() bool { s := p.Stats(); return len(s.PIDs) == 3 && s.Crashes["signal SIGSEGV"] == 1 })
	s := p.Stats()
	if s.Exits[ExitCrashInJob] != 1 || s.Crashes["signal SIGSEGV"] != 1 || s.Started != 4 {
		t.Fatalf("the crash is counted once and never retried: %+v", s)
	}
}

func TestCellPastDeadlineIsKilledAndReplaced(t *testing.T) {
	p := startPool(t, 1, 1, 1000, 1<<30)
	if err := thumbnail(p, celltest.Hang, 300*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	waitFor(t, "the replacement", func() bool { s := p.Stats(); return s.Exits[ExitDeadline] == 1 && len(s.PIDs) == 2 })
	if len(p.Stats().Crashes) != 0 {
		t.Fatal("a cell killed for its deadline is not a crash")
	}
	if err := thumbnail(p, ok, waitLong); err != nil {
		t.Fatal(err)
	}
}

func TestIdleCellKilledCostsNoRequest(t *testing.T) {
	p := startPool(t, 1, 1, 1000, 1<<30)
	victim := p.Stats().PIDs[0]
	syscall.Kill(victim, syscall.SIGSEGV)
	// It served no job yet: counted as a crash before its first job.
	waitFor(t, "the idle death to be seen", func() bool {
		s := p.Stats()
		return s.Exits[ExitCrashIdle]+s.Exits[ExitCrashBeforeJob] == 1
	})
	for i := 0; i < 5; i++ {
		if err := thumbnail(p, ok, waitLong); err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	waitFor(t, "the replacement", func() bool { s := p.Stats(); return len(s.PIDs) == 2 && s.Crashes["signal SIGSEGV"] == 1 })
	if s := p.Stats(); s.Crashes["signal SIGSEGV"] != 1 || s.Exits[ExitCrashInJob] != 0 || slices.Contains(s.PIDs, victim) {
		t.Fatalf("%+v", s)
	}
}

// expiring is a job's context whose deadline passes as Run returns: Err
// reports it, but Done has not fired, so Run saw no deadline and killed
// nothing. Until then the pool, asking ctx.Err() after Run, dropped a
// healthy cell from its books without killing it.
type expiring struct{ context.Context }

func (expiring) Err() error { return context.DeadlineExceeded }

// A job that ends with an error of its own keeps its cell, even when the
// deadline passes just after: "deadline" is what Run returned, not what
// ctx says afterwards.
func TestDeadlineAfterAnErrorKeepsTheCell(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  []byte
		w    int
	}{
		{"an error the engine did not type", []byte("source"), celltest.Untyped},
		{"a source over the cell's limit", make([]byte, celltest.Spec("serve").MaxSource+1), ok},
		{"a typed engine error", []byte("source"), celltest.TooBig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPool(t, 1, 0, 1000, 1<<30)
			pid := p.Stats().PIDs[0]
			// A cell dropped from the books is not the pool's to stop:
			// without this, a failure here would hang in p.Stop.
			t.Cleanup(func() {
				if t.Failed() {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if _, err := p.Run(expiring{context.Background()}, thumbjob.Source{Bytes: tc.src}, thumbjob.Job{Options: celltest.Job(tc.w)}); err == nil || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want the job's own error", err)
			}
			if s := p.Stats(); s.Exits[ExitDeadline] != 0 || s.Idle != 1 || s.PIDs[0] != pid || s.Started != 1 {
				t.Fatalf("the cell left the pool: %+v", s)
			}
			if err := thumbnail(p, ok, waitLong); err != nil {
				t.Fatal(err)
			}
			if s := p.Stats(); len(s.PIDs) != 1 || s.PIDs[0] != pid {
				t.Fatalf("the next job ran elsewhere: %+v", s)
			}
		})
	}
}

// Jobs wait for a cell rather than fail while every cell is busy, and
// give up with their deadline.
func TestJobsWaitForACell(t *testing.T) {
	p := startPool(t, 1, 0, 1000, 1<<30)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- thumbnail(p, ok, waitLong)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hang := make(chan error)
	go func() { hang <- thumbnail(p, celltest.Hang, waitLong) }()
	waitFor(t, "the cell to be busy", func() bool { return p.Stats().Busy == 1 })
	if err := thumbnail(p, ok, 100*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("with every cell busy: %v", err)
	}
	syscall.Kill(p.Stats().BusyPIDs[0], syscall.SIGKILL)
	if err := <-hang; !errors.Is(err, cell.ErrCrashed) {
		t.Fatalf("the killed job: %v", err)
	}
}

// A cell that grew past its allowance and then stayed idle is replaced;
// one that stayed within it is not. The keeper looks every second; the
// test asks recycleIdle itself, so the cell that stays is seen to be
// judged, not merely not reached yet.
func TestGrownIdleCellIsReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		growth  int64
		replace bool
	}{{"within its allowance", 1 << 30, false}, {"grown", -1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Config{Spec: *celltest.Spec("serve"), Cells: 1, MaxJobs: 1000, MaxRSS: 1 << 30,
				IdleRecycle: time.Nanosecond, IdleGrowth: tc.growth, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			if err := thumbnail(p, ok, waitLong); err != nil {
				t.Fatal(err)
			}
			p.recycleIdle()
			if !tc.replace {
				if s := p.Stats(); s.Exits[ExitIdle] != 0 || s.Idle != 1 {
					t.Fatalf("a cell within its growth allowance was replaced: %+v", s)
				}
				return
			}
			waitFor(t, "the grown cell to be replaced", func() bool { s := p.Stats(); return s.Exits[ExitIdle] >= 1 && len(s.PIDs) == 1 && s.Starting == 0 })
			if err := thumbnail(p, ok, waitLong); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A start that crashes is a crash too: every cell that dies on its own is
// counted, whatever it was doing.
func TestCrashAtStartIsCounted(t *testing.T) {
	p := New(Config{Spec: *celltest.Spec("once:" + filepath.Join(t.TempDir(), "started")), Cells: 1, MaxJobs: 1000, MaxRSS: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	syscall.Kill(p.Stats().PIDs[0], syscall.SIGSEGV)
	waitFor(t, "the failed restart", func() bool {
		s := p.Stats()
		return s.Crashes["signal SIGSEGV"] == 1 && s.Crashes["exit status 7"] >= 1 && s.Exits[ExitStartFailed] >= 1
	})
}

func TestStartFailsWithItsReason(t *testing.T) {
	p := New(Config{Spec: *celltest.Spec("die"), Cells: 1, MaxJobs: 1, MaxRSS: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Start(); err == nil || !strings.Contains(err.Error(), "exit status 7") {
		t.Fatalf("got %v", err)
	}
}

// Stop drains: every cell leaves and is reaped, and no descriptor stays.
func TestStopLeavesNoProcessOrDescriptor(t *testing.T) {
	before := celltest.OpenFDs(t)
	p := New(Config{Spec: *celltest.Spec("serve"), Cells: 2, Spares: 2, MaxJobs: 2, MaxRSS: 1 << 30,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := ok
			if i%7 == 0 {
				w = celltest.Segfault
			}
			thumbnail(p, w, waitLong)
		}()
	}
	wg.Wait()
	p.Stop()
	if s := p.Stats(); len(s.PIDs) != 0 || s.Exits[ExitStartFailed] != 0 {
		t.Fatalf("after Stop: %+v", s)
	}
	if kids := celltest.Children(t, os.Getpid()); len(kids) != 0 {
		t.Fatalf("processes left: %v", kids)
	}
	if after := celltest.OpenFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
	if err := thumbnail(p, ok, 100*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stopped pool runs nothing: %v", err)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A cell that says hello and dies before any job (a bad node, a library
// that crashes after start-up) is not replaced in a tight loop: the pool
// backs off, doubling to a bound, and counts it.
func TestCellsDyingAtStartAreReplacedWithBackOff(t *testing.T) {
	p := New(Config{Spec: *celltest.Spec("brief"), Cells: 1, MaxJobs: 100, MaxRSS: 1 << 30})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	time.Sleep(2 * time.Second)
	s := p.Stats()
	// Without back-off a start every ~30 ms: dozens. With it: 100, 200,
	// 400, 800 ms waits.
	if s.Started > 8 {
		t.Errorf("%d cells started in 2 s", s.Started)
	}
	if s.Exits[ExitCrashBeforeJob] < 2 {
		t.Errorf("cells that died before a job: %d counted (exits %v)", s.Exits[ExitCrashBeforeJob], s.Exits)
	}
	if s.StartBackOff <= 0 {
		t.Error("no back-off reported")
	}
}

// An info job runs on a cell as a thumbnail does, and counts among its
// jobs: the cell's bounds hold whatever its jobs were.
func TestInfoJobsRunOnCells(t *testing.T) {
	p := startPool(t, 1, 0, 2, 1<<30)
	first := p.Stats().PIDs
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	res, err := p.Run(ctx, thumbjob.Source{Bytes: []byte("source")}, thumbjob.Job{Info: &thumbjob.InfoJob{ThumbHash: true}})
	if err != nil || res.Info == nil || res.Info.Width != 1 || res.Info.ThumbHash == "" {
		t.Fatalf("info: %+v %v", res.Info, err)
	}
	if err := thumbnail(p, ok, waitLong); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cell's replacement after two jobs", func() bool {
		s := p.Stats()
		return s.Exits[ExitJobs] == 1 && len(s.PIDs) == 1 && !slices.Contains(first, s.PIDs[0])
	})
}
