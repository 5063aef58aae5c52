package cell_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/celltest"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// The test binary re-executed by celltest.Spec is a fake cell: the real
// protocol over descriptor 3, around an engine the job's width commands.
func TestMain(m *testing.M) {
	celltest.Main()
	os.Exit(m.Run())
}

const ok = 10 // a width the fake engine answers with a PNG

func startCell(t *testing.T, mode string) *cell.Cell {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cell.Start(ctx, celltest.Spec(mode))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(5 * time.Second) })
	return c
}

func run(c *cell.Cell, w int, timeout time.Duration) (thumbjob.Image, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, _, err := c.Run(ctx, thumbjob.Source{Bytes: []byte("source")}, thumbjob.Job{Options: celltest.Job(w)})
	return res.Image, err
}

func TestCellServesJobsInTurn(t *testing.T) {
	c := startCell(t, "serve")
	if c.Hello().PID != c.PID() || c.Hello().Libvips != "fake" {
		t.Fatalf("hello %+v from pid %d", c.Hello(), c.PID())
	}
	for i := 0; i < 3; i++ {
		img, err := run(c, ok, 30*time.Second)
		if err != nil || !bytes.Equal(img.Bytes, celltest.PNG) || img.Width != ok || img.Format != imagefmt.PNG {
			t.Fatalf("job %d: %+v, %v", i, img, err)
		}
	}
	_, err := run(c, celltest.TooBig, 30*time.Second)
	if !errors.Is(err, thumbjob.ErrTooManyPixels) || err.Error() != "too many pixels: the source is 9x9" {
		t.Fatalf("typed error: %v", err)
	}
	if _, err := run(c, ok, 30*time.Second); err != nil {
		t.Fatalf("after a typed error the cell serves on: %v", err)
	}
	if _, _, err := c.Run(context.Background(), thumbjob.Source{Bytes: make([]byte, 2<<20)}, thumbjob.Job{Options: celltest.Job(ok)}); err == nil || errors.Is(err, cell.ErrCrashed) {
		t.Fatalf("a source over the limit is refused before it is sent: %v", err)
	}
	c.Close(5 * time.Second)
	if c.Exit() != "exit status 0" {
		t.Fatalf("a cell told to leave exits 0, got %s", c.Exit())
	}
}

func TestCellFaultsEndTheJobWithHowTheCellEnded(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    int
		exit string
	}{
		{"segfault", celltest.Segfault, "signal SIGSEGV"},
		{"exit", celltest.Exit, "exit status 3"},
		{"garbage", celltest.Garbage, "protocol"},
		{"wrong format", celltest.WrongFmt, "protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startCell(t, "serve")
			_, err := run(c, tc.w, 30*time.Second)
			var crash *cell.CrashError
			if !errors.Is(err, cell.ErrCrashed) || !errors.As(err, &crash) || crash.Exit != tc.exit || crash.PID != c.PID() {
				t.Fatalf("got %v, want a crash with exit %q", err, tc.exit)
			}
			select {
			case <-c.Exited():
			default:
				t.Fatal("the process is not reaped")
			}
		})
	}
}

func TestCellPastDeadlineIsKilled(t *testing.T) {
	c := startCell(t, "serve")
	_, err := run(c, celltest.Hang, 200*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	<-c.Exited()
	if c.Exit() != "signal SIGKILL" {
		t.Fatalf("the cell ended with %s", c.Exit())
	}
}

func TestCellThatCannotStartLeavesNothing(t *testing.T) {
	before := celltest.OpenFDs(t)
	for _, tc := range []struct{ mode, want string }{
		{"die", "exit status 7"},
		{"silent", "signal SIGKILL"},
		{"liar", "protocol"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		if tc.mode == "die" || tc.mode == "liar" {
			cancel()
			ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		}
		_, err := cell.Start(ctx, celltest.Spec(tc.mode))
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.mode, err, tc.want)
		}
	}
	spec := celltest.Spec("serve")
	spec.Path = "/nonexistent/thumbd"
	if _, err := cell.Start(context.Background(), spec); err == nil {
		t.Error("a missing binary starts no cell")
	}
	if after := celltest.OpenFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}

// A cell in a container is reached through a socket on a shared volume:
// the supervisor listens, the cell connects, the protocol is the same.
func TestCellConnectingToASocket(t *testing.T) {
	spec := celltest.Spec("serve")
	spec.Listen = filepath.Join(t.TempDir(), "cell.sock")
	spec.Env = append(spec.Env, cell.SocketEnv+"="+spec.Listen)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cell.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(5 * time.Second)
	if img, err := run(c, ok, 30*time.Second); err != nil || !bytes.Equal(img.Bytes, celltest.PNG) {
		t.Fatalf("%v", err)
	}
	spec = celltest.Spec("serve") // no socket to connect to: it never does
	spec.Listen = filepath.Join(t.TempDir(), "cell.sock")
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cell.Start(ctx, spec); err == nil {
		t.Fatal("a cell that never connects did not fail")
	}
}

// A descriptor the supervisor inherited without close-on-exec gets it.
func TestSealInheritedMarksDescriptorsCloseOnExec(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil { // no O_CLOEXEC, as a careless parent leaves it
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if err := cell.SealInherited(); err != nil {
		t.Fatal(err)
	}
	for _, fd := range p {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d: flags %#x, %v", fd, flags, err)
		}
	}
}

// A cell whose sandbox has a layer off starts when the sandbox is best
// effort, and is refused, naming the layer and why, when it is required.
func TestCellWithALayerOffIsRefusedWhenRequired(t *testing.T) {
	c := startCell(t, "unsealed")
	if layers := c.Hello().Sandbox; len(layers) == 0 {
		t.Fatal("no layers in the hello")
	}
	before := celltest.OpenFDs(t)
	spec := celltest.Spec("unsealed")
	spec.RequireSandbox = true
	c, err := cell.Start(context.Background(), spec)
	if err == nil {
		c.Close(time.Second)
		t.Fatal("a cell without seccomp started with the sandbox required")
	}
	if !strings.Contains(err.Error(), "seccomp") || !strings.Contains(err.Error(), "EPERM") {
		t.Errorf("the error does not say which layer and why: %v", err)
	}
	if after := celltest.OpenFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}

// The result length a cell declares is held to what the job can make (its
// pixels, a few bytes each, and headers), not to the largest job's:
// an 18x18 job declaring 512 KiB is a protocol breach at once, before any of
// it is allocated or waited for.
func TestCellResultLengthIsBoundByTheJob(t *testing.T) {
	c := startCell(t, "serve")
	began := time.Now()
	_, err := run(c, celltest.Inflated, 10*time.Second)
	var crash *cell.CrashError
	if !errors.As(err, &crash) || crash.Exit != "protocol" {
		t.Fatalf("got %v, want a protocol breach", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("took %s: the supervisor waited for the declared bytes", took)
	}
}

// A cell's stderr is its own pipe: the supervisor reads it and writes each
// line as a field of its own JSON record, tagged with the cell's PID, cut
// to a bounded length and rate. A line a cell forges as the supervisor's
// log stays a string inside one.
func TestCellOutputIsTaggedAndBounded(t *testing.T) {
	var out launch.Log
	spec := celltest.Spec("noisy")
	spec.Stderr = &out
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cell.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	c.Close(5 * time.Second)
	<-c.Exited()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || len(lines) > 200 {
		t.Errorf("%d lines reached the supervisor's log of a flood of 5002", len(lines))
	}
	for _, l := range lines {
		var rec struct {
			Msg  string `json:"msg"`
			PID  int    `json:"cell_pid"`
			Line string `json:"line"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Msg != "cell output" || rec.PID != c.PID() {
			t.Fatalf("not a record of the supervisor's about cell %d: %.200s", c.PID(), l)
		}
		if len(l) > 8<<10 {
			t.Errorf("a line of %d bytes", len(l))
		}
	}
	if !strings.Contains(lines[0], `"line":"{\"time\"`) {
		t.Errorf("the forged line is not kept as a string: %.200s", lines[0])
	}
}
