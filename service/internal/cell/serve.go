package cell

import (
	"context"
	"errors"
	"io"
	"syscall"
	"unsafe"

	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// Engine is what a cell runs its jobs on: thumb.Engine, started.
type Engine interface {
	Thumbnail(ctx context.Context, src []byte, o thumb.Options) (thumb.Image, error)
}

// Worker is the cell's side of the protocol.
type Worker struct {
	Engine    Engine
	MaxSource int64 // the largest source the supervisor may send
	// Memory reports libvips' tracked allocations (current, peak); nil
	// reports none.
	Memory func() (current, peak int64)
}

// Serve says hello on conn, then answers one job at a time until the
// supervisor closes the socket (nil) or breaks the protocol (an error).
func (w Worker) Serve(conn io.ReadWriter, hello Hello) error {
	if err := writeFrame(conn, kindHello, hello, nil); err != nil {
		return err
	}
	for {
		var job jobMeta
		src, err := readFrame(conn, kindJob, &job, w.MaxSource)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		meta, img := w.run(src, job)
		if err := writeFrame(conn, kindResult, meta, img); err != nil {
			return err
		}
	}
}

// run makes one thumbnail and measures what it cost the process.
func (w Worker) run(src []byte, job jobMeta) (resultMeta, []byte) {
	before := minorFaults()
	img, err := w.Engine.Thumbnail(context.Background(), src, thumb.Options{
		Width: job.Width, Height: job.Height, Fit: thumb.Fit(job.Fit), Gravity: thumb.Gravity(job.Gravity),
		Format: imagefmt.Format(job.Format), Quality: job.Quality,
	})
	var meta resultMeta
	meta.Stats.MinorFaults = minorFaults() - before
	if w.Memory != nil {
		meta.Stats.LibvipsMemory, meta.Stats.LibvipsPeak = w.Memory()
	}
	if err != nil {
		meta.Error, meta.Message = kindInternal, err.Error()
		for _, k := range errorKinds {
			if errors.Is(err, k.err) {
				meta.Error = k.kind
				break
			}
		}
		if len(meta.Message) > maxMessage {
			meta.Message = meta.Message[:maxMessage]
		}
		return meta, nil
	}
	meta.Format, meta.Width, meta.Height = string(img.Format), img.Width, img.Height
	return meta, img.Bytes
}

// minorFaults is the process's minor page faults so far (getrusage needs no
// file, so it works inside the sandbox).
func minorFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Minflt
}

// DefaultCrashSignals gives the signals of a crash their default action in
// this process. Go's runtime turns a fault in C code into "exit status 2"
// and a dump of every goroutine; with the default action a cell dies by
// the signal itself (no core: the sandbox sets RLIMIT_CORE to 0), which is
// what the supervisor reports.
func DefaultCrashSignals() {
	var dfl [4]uint64 // struct sigaction: SIG_DFL, no flags, no restorer, empty mask
	for _, sig := range []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGABRT, syscall.SIGTRAP} {
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	}
}
