package engines

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// cellAddressSpace is how much address space a cell may map beyond what it
// has mapped once libvips is up, when the supervisor does not say
// (cellsAddressSpace derives it from the memory budget): the largest job at
// the default limits (a 40 MP source) peaked under 600 MiB of address space
// here, and glibc reserves 64 MiB per malloc arena. A runaway allocation
// fails there instead of growing until the pod's OOM killer picks a victim.
const cellAddressSpace = 4 << 30

// cellNice is a cell's nice value: libvips' pixel work yields the CPU to
// the supervisor, whose threads accept connections, read uploads and
// answer the probes. Under 500 clients on 2 CPUs the supervisor's threads
// waited up to 36 ms for a CPU behind the cells' libvips workers (perf
// sched, bench/results/2026-12-03-overload), and a probe's answer with
// them. Nice 5 weighs a third of nice 0: the cells still get every CPU
// the supervisor leaves, and a woken supervisor thread preempts them.
const cellNice = 5

// cellOpenFiles is RLIMIT_NOFILE in a cell: its socket, stdio, the Go
// runtime's poller, and nothing it opens (it cannot open files).
const cellOpenFiles = 32

// ServeCell is `thumbd cell`, the worker process of cells mode, started
// by the supervisor with its socket on descriptor 3 (it is not for
// people): it starts libvips, seals the process in its sandbox, says hello
// and serves jobs until the supervisor closes the socket. wrap lets tests
// put a fault injector around the engine.
func ServeCell(getenv func(string) string, stderr io.Writer, wrap func(cell.Engine) cell.Engine) error {
	conn, err := cell.Socket(getenv)
	if err != nil {
		return fmt.Errorf("thumbd cell runs as a worker of `thumbd` with THUMBD_ENGINE=cells: %w", err)
	}
	set, err := cell.ReadSettings(getenv)
	if err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	cell.DefaultCrashSignals()
	// The supervisor ends cells by closing their socket (drain) or by
	// SIGKILL; a terminal's Ctrl-C or a SIGTERM sent to the process group
	// must not cut jobs short.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// The cell's Go code only moves bytes between its socket and libvips
	// (whose threads are its own); fixing GOMAXPROCS also stops the runtime
	// from re-reading cgroup files, which the sandbox would refuse.
	runtime.GOMAXPROCS(1)
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: set.LogLevel})).With("cell_pid", os.Getpid())
	// Before libvips starts its threads, which inherit it.
	if err := lowerPriority(cellNice); err != nil {
		logger.Warn("cell: the libvips work keeps the supervisor's priority", "err", err)
	}
	set.Engine.Logger = logger
	eng := thumb.New(set.Engine)
	eng.Start()
	// Before the sandbox: the watermark's bytes came in the settings, and
	// are decoded once here.
	if err := eng.LoadWatermark(); err != nil {
		return fmt.Errorf("cell: THUMBD_WATERMARK: %w", err)
	}
	as := uint64(cellAddressSpace)
	if set.AddressSpace > 0 {
		as = set.AddressSpace
	}
	layers := sandbox.Apply(sandbox.Config{AddressSpace: as, OpenFiles: cellOpenFiles})
	w := cell.Worker{Engine: wrap(eng), MaxSource: set.MaxSource, Memory: thumb.Memory, AfterJob: trimAfterLargeJob}
	return w.Serve(conn, cell.Hello{PID: os.Getpid(), Libvips: thumb.Version(), Sandbox: layers})
}

// lowerPriority sets the nice value of every thread of the process: Linux
// keeps one per thread, setpriority(PRIO_PROCESS, 0) changes only the
// calling one, and the threads created later inherit their creator's.
// Raising one's own nice value needs no privilege. A thread started while
// the list is read may be missing from it, so the list is read again
// until a pass finds no thread it had not set.
func lowerPriority(nice int) error {
	set := map[int]bool{}
	for pass := 0; pass < 4; pass++ {
		tids, err := procfs.Tasks(os.Getpid())
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if set[tid] {
				continue
			}
			// A thread that ended since the listing is ESRCH: nothing to do.
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
				return fmt.Errorf("setpriority %d: %w", tid, err)
			}
			set[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
	return nil
}

// trimLargerThan is the estimated peak over which a cell gives its freed
// memory back after the job: malloc_trim costs about 1.7 ms of CPU a call
// (11 % of a small thumbnail's, measured), and small jobs leave little to
// give back.
const trimLargerThan = 32 << 20

// trimAfterLargeJob runs malloc_trim after a large job, so that between
// jobs a cell holds about the idle memory the supervisor's plan counts.
func trimAfterLargeJob(src thumbjob.Source, job thumbjob.Job) {
	if LargeJob(src, job) {
		thumb.TrimHeap()
	}
}

// LargeJob reports whether the job's estimated peak (memcost, from the
// header the supervisor's look read: no decoding, no second read) is over
// trimLargerThan. A description costs what its decode resembles.
func LargeJob(src thumbjob.Source, job thumbjob.Job) bool {
	o := job.Options
	if job.Info != nil {
		o = job.Info.AsThumbnail()
	}
	return src.Header.Width > 0 && memcost.Estimate(src.Header, memcost.JobOf(o)) > trimLargerThan
}
