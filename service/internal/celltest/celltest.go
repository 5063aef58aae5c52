// Package celltest is a test helper: a fake cell that speaks the real
// protocol over descriptor 3 around an engine whose behaviour the job's
// width picks, so that the supervisor's side (cell, cellpool) is tested
// against real processes without libvips.
package celltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Widths the fake engine reads as orders; any other width is a tiny PNG of
// that width.
const (
	Segfault = 11 // die by SIGSEGV
	Hang     = 12 // never answer
	Garbage  = 13 // answer outside the protocol
	TooBig   = 14 // thumbjob.ErrTooManyPixels
	WrongFmt = 15 // JPEG bytes for a PNG job
	Exit     = 16 // exit status 3
	Untyped  = 17 // an error the engine did not type
	Inflated = 18 // a result declaring 512 KiB, far more than an 18x18 job can be, then silence
)

// PNG is the fake engine's image.
var PNG = []byte("\x89PNG\r\n\x1a\n fake")

// env names the fake cell's mode in a re-executed test binary.
const env = "CELLTEST_WORKER"

// Main runs the fake cell, and exits, when this process was started as
// one (by Spec); otherwise it returns. Call it first in TestMain.
func Main() {
	mode := os.Getenv(env)
	if mode == "" {
		return
	}
	os.Exit(serve(mode))
}

// Spec starts this test binary as a fake cell in mode: "serve" (the
// protocol), "die" (exit 7 at once), "silent" (never say hello), "liar"
// (a hello from another PID), "brief" (a hello, then exit 5 before any
// job), "noisy" (serve, after forged, long and
// many lines on stderr), "unsealed" (serve, its hello saying the
// seccomp layer is off) or "once:FILE" (serve if FILE does not exist,
// creating it; else die).
func Spec(mode string) *cell.Spec {
	return &cell.Spec{
		Path: os.Args[0], Env: append(os.Environ(), env+"="+mode), Stderr: os.Stderr,
		MaxSource: 1 << 20, MaxSide: 4096,
	}
}

// Unsealed is the sandbox of a cell whose runtime refused seccomp: every
// other layer on.
func Unsealed() []sandbox.Layer {
	var layers []sandbox.Layer
	for _, name := range sandbox.Names() {
		l := sandbox.Layer{Name: name, On: true}
		if name == sandbox.Seccomp {
			l = sandbox.Layer{Name: name, Detail: "seccomp(2) was refused (EPERM)"}
		}
		layers = append(layers, l)
	}
	return layers
}

// Job is a PNG job the fake engine reads width as its order.
func Job(width int) thumbjob.Options {
	return thumbjob.Options{Width: width, Height: width, Fit: thumbjob.FitCover, Gravity: thumbjob.GravityCentre, Format: imagefmt.PNG}
}

type engine struct{ conn io.Writer }

// Run is the engine's one call: a thumbnail or a description.
func (e engine) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	return job.Run(ctx, src, e.thumbnail, e.info)
}

func (e engine) thumbnail(_ context.Context, _ thumbjob.Source, o thumbjob.Options) (thumbjob.Image, error) {
	switch o.Width {
	case Segfault:
		// The signal may land on another thread: wait for it.
		syscall.Kill(os.Getpid(), syscall.SIGSEGV)
		hang()
	case Hang:
		hang()
	case Garbage:
		e.conn.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		hang()
	case TooBig:
		return thumbjob.Image{}, fmt.Errorf("%w: the source is 9x9", thumbjob.ErrTooManyPixels)
	case Untyped:
		return thumbjob.Image{}, errors.New("no exporter for this job")
	case WrongFmt:
		return thumbjob.Image{Bytes: []byte("\xFF\xD8\xFF fake"), Format: o.Format, Width: 1, Height: 1}, nil
	case Exit:
		os.Exit(3)
	case Inflated:
		// A result frame's header: kind, metadata length 2 ("{}"), payload
		// length 512 KiB; then the metadata and a few bytes.
		e.conn.Write([]byte("R\x00\x00\x00\x02\x00\x00\x00\x00\x00\x08\x00{}\x89PNG"))
		hang()
	}
	return thumbjob.Image{Bytes: PNG, Format: o.Format, Width: o.Width, Height: o.Width}, nil
}

// info describes every source as a 1x1 PNG; with a ThumbHash when asked
// (a one-pixel image's, as the published encoder gives it).
func (engine) info(_ context.Context, _ thumbjob.Source, job thumbjob.InfoJob) (thumbjob.Info, error) {
	i := thumbjob.Info{Format: imagefmt.PNG, Width: 1, Height: 1, StoredWidth: 1, StoredHeight: 1, Orientation: 1, Frames: 1, Space: "srgb"}
	if job.ThumbHash {
		i.ThumbHash = "AAgCBwAAAAAAAAAAAAAAAAAAAAAAAAAA"
	}
	return i, nil
}

// hang blocks for good. Not select{}: in a binary without cgo the runtime
// would see every goroutine asleep and exit with status 2, where a cell
// that hangs must stay until it is killed.
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

func serve(mode string) int {
	cell.DefaultCrashSignals()
	conn, err := cell.Socket(os.Getenv)
	if err != nil {
		return 9
	}
	if marker, ok := strings.CutPrefix(mode, "once:"); ok {
		mode = "serve"
		if f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
			mode = "die"
		} else {
			f.Close()
		}
	}
	switch mode {
	case "noisy":
		// A cell that writes what a compromised one might: a line forged
		// as the supervisor's own log, a line of 100 KB, and a flood.
		fmt.Fprintln(os.Stderr, `{"time":"2026-01-01T00:00:00Z","level":"ERROR","msg":"forged","request_id":"x"}`)
		fmt.Fprintln(os.Stderr, strings.Repeat("A", 100_000))
		for i := 0; i < 5000; i++ {
			fmt.Fprintln(os.Stderr, "flood", i)
		}
		mode = "serve"
	case "brief":
		// Says hello, then dies before any job: a crash loop at start.
		time.AfterFunc(20*time.Millisecond, func() { os.Exit(5) })
		mode = "serve"
	case "die":
		return 7
	case "silent":
		hang()
	case "liar":
		cell.Worker{Engine: engine{conn}}.Serve(conn, cell.Hello{PID: 1})
		return 0
	case "unsealed":
		cell.Worker{Engine: engine{conn}, MaxSource: 1 << 20}.Serve(conn, cell.Hello{PID: os.Getpid(), Libvips: "fake", Sandbox: Unsealed()})
		return 0
	}
	w := cell.Worker{Engine: engine{conn}, MaxSource: 1 << 20}
	if err := w.Serve(conn, cell.Hello{PID: os.Getpid(), Libvips: "fake"}); err != nil {
		return 2
	}
	return 0
}

// OpenFDs is the number of descriptors this process holds: a test takes it
// before and after, to show nothing leaked.
func OpenFDs(t testing.TB) int {
	t.Helper()
	fds, err := procfs.FDs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// Children lists the child processes of pid, zombies included.
func Children(t testing.TB, pid int) []int {
	t.Helper()
	kids, err := procfs.Children(pid)
	if err != nil {
		t.Fatal(err)
	}
	return kids
}
