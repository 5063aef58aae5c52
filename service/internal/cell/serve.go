package cell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// SettingsEnv carries a cell's Settings from its supervisor, as JSON.
const SettingsEnv = "THUMBD_CELL_SETTINGS"

// Settings is all a cell is told: the engine's limits, the largest source
// and the log level. Never the supervisor's own settings (origins, keys,
// paths): a cell that a hostile image takes over finds nothing there.
type Settings struct {
	Engine    thumbjob.Config `json:"engine"` // its Logger is not sent
	MaxSource int64           `json:"max_source"`
	LogLevel  slog.Level      `json:"log_level"`
	// AddressSpace is the cell's RLIMIT_AS beyond what it has mapped once
	// libvips is up (0: the cell's default).
	AddressSpace uint64 `json:"address_space"`
}

// Env is s as the cell's environment variable.
func (s Settings) Env() (string, error) {
	s.Engine.Logger = nil
	b, err := json.Marshal(s)
	return SettingsEnv + "=" + string(b), err
}

// ReadSettings reads what the supervisor put in SettingsEnv.
func ReadSettings(getenv func(string) string) (Settings, error) {
	var s Settings
	if err := json.Unmarshal([]byte(getenv(SettingsEnv)), &s); err != nil {
		return s, fmt.Errorf("%s: %w", SettingsEnv, err)
	}
	return s, nil
}

// SocketEnv names the Unix socket a cell connects to when it is started
// with Spec.Listen; otherwise its socket is descriptor 3.
const SocketEnv = "THUMBD_CELL_SOCKET"

// Socket is the cell's end of its socket: descriptor 3 as handed down by
// Start, or a connection to the path in SocketEnv.
func Socket(getenv func(string) string) (io.ReadWriter, error) {
	if path := getenv(SocketEnv); path != "" {
		return net.Dial("unix", path)
	}
	f := os.NewFile(3, "cell-socket")
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeSocket == 0 {
		return nil, errors.New("no cell socket: descriptor 3 is not a socket and " + SocketEnv + " is not set")
	}
	return f, nil
}

// Engine is what a cell runs its jobs on: a started thumb.Engine, whose
// one call is the in-process engine's.
type Engine interface {
	Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error)
}

// Worker is the cell's side of the protocol.
type Worker struct {
	Engine    Engine
	MaxSource int64 // the largest source the supervisor may send
	// Memory reports libvips' tracked allocations (current, peak); nil
	// reports none.
	Memory func() (current, peak int64)
	// AfterJob, when set, runs with each job once its result is sent: the
	// cell gives its
	// freed memory back (malloc_trim), so that between jobs it holds about
	// its idle memory, which is what the supervisor's memory plan counts.
	AfterJob func(src thumbjob.Source, job thumbjob.Job)
}

// Serve says hello on conn, then answers one job at a time until the
// supervisor closes the socket (nil) or breaks the protocol (an error).
func (w Worker) Serve(conn io.ReadWriter, hello Hello) error {
	if err := writeFrame(conn, kindHello, hello, nil); err != nil {
		return err
	}
	for {
		var job jobMeta
		src, err := readFrameOf(conn, kindJob, &job, w.MaxSource, true)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		// The source's look (its format and header) is the supervisor's,
		// made of these same bytes before it sent them: the cell does not
		// sniff them again. What libvips then loads is held by the sandbox
		// whatever the bytes are.
		job.Source.Bytes = src
		meta, img := w.run(job)
		if err := writeFrame(conn, kindResult, meta, img); err != nil {
			return err
		}
		if w.AfterJob != nil {
			w.AfterJob(job.Source, job.Job)
		}
	}
}

// run runs one job, a thumbnail or a description, and measures what it
// cost the process. Only a thumbnail is traced stage by stage (the
// supervisor's engine span holds a description whole).
func (w Worker) run(job jobMeta) (resultMeta, []byte) {
	var res thumbjob.Result
	began := time.Now()
	meta := w.measure(func() (err error) {
		res, err = w.Engine.Run(context.Background(), job.Source, job.Job)
		return err
	})
	if job.Info != nil {
		if meta.Error == "" {
			meta.Info = res.Info
		}
		return meta, nil
	}
	img := res.Image
	if job.Traceparent != "" {
		// Timings only for a traced job: an untraced one sends what it
		// always did.
		meta.Traceparent, meta.JobStart, meta.JobEnd = job.Traceparent, began, time.Now()
		if meta.Error == "" {
			meta.Trace = &img.Trace
		}
	}
	if meta.Error != "" {
		return meta, nil
	}
	meta.Format, meta.Width, meta.Height = string(img.Format), img.Width, img.Height
	return meta, img.Bytes
}

// measure runs one job and gives its result's stats, and its error as
// the wire carries it.
func (w Worker) measure(job func() error) resultMeta {
	before := minorFaults()
	err := job()
	var meta resultMeta
	meta.Stats.MinorFaults = minorFaults() - before
	if w.Memory != nil {
		meta.Stats.LibvipsMemory, meta.Stats.LibvipsPeak = w.Memory()
	}
	if err != nil {
		meta.Error, meta.Message = kindInternal, err.Error()
		var typed *thumbjob.Error
		if errors.As(err, &typed) {
			meta.Error = string(typed.Code)
		}
		if len(meta.Message) > maxMessage {
			meta.Message = meta.Message[:maxMessage]
		}
	}
	return meta
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
