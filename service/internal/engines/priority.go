package engines

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
)

// pixelNice is the nice value of libvips' pixel work, in a cell (every
// thread) and in process (libvips' own threads): it yields the CPU to the
// threads that accept connections, read uploads and answer the probes.
// Under 500 clients on 2 CPUs the supervisor's threads waited up to 36 ms
// for a CPU behind the cells' libvips workers (perf sched,
// bench/results/2026-12-03-overload), and a probe's answer with them.
// Nice 5 weighs a third of nice 0: libvips still gets every CPU the
// server's threads leave, and a woken server thread preempts it.
const pixelNice = 5

// workerScanEvery bounds how often the in-process engine looks for new
// libvips threads: libvips keeps its threads for later jobs, so new ones
// are rare after the first jobs, and a scan reads one small file per
// thread.
const workerScanEvery = time.Second

// lowerPriority sets the nice value of every thread of the process, for a
// cell: Linux keeps one per thread, setpriority(PRIO_PROCESS, 0) changes
// only the calling one, and the threads created later inherit their
// creator's. Raising one's own nice value needs no privilege. A thread
// started while the list is read may be missing from it, so the list is
// read again until a pass finds no thread it had not set.
func lowerPriority(nice int) error {
	set := map[int]bool{}
	for pass := 0; pass < 4; pass++ {
		fresh, err := reniceThreads(nice, set, func(int) bool { return true })
		if err != nil || !fresh {
			return err
		}
	}
	return nil
}

// reniceThreads sets nice on each thread of the process that pick accepts
// and done lacks, adds it to done, and drops from done the threads that
// ended. It reports whether it set any.
func reniceThreads(nice int, done map[int]bool, pick func(tid int) bool) (fresh bool, err error) {
	tids, err := procfs.Tasks(os.Getpid())
	if err != nil {
		return false, err
	}
	listed := make(map[int]bool, len(tids))
	for _, tid := range tids {
		listed[tid] = true
		if done[tid] || !pick(tid) {
			continue
		}
		// A thread that ended since the listing is ESRCH: nothing to do.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && err != syscall.ESRCH {
			return fresh, fmt.Errorf("setpriority %d: %w", tid, err)
		}
		done[tid], fresh = true, true
	}
	maps.DeleteFunc(done, func(tid int, _ bool) bool { return !listed[tid] })
	return fresh, nil
}

// workerPriority lowers libvips' threads in the HTTP process to pixelNice
// and leaves Go's alone: the process's Go threads all carry the main
// thread's name, and GLib names the threads it starts ("libvips worker").
// libvips starts them during jobs, from whichever thread called it, so
// they are looked for after jobs, at most once per workerScanEvery.
type workerPriority struct {
	pid    int
	goName string // the main thread's name, which Go's threads share
	logger *slog.Logger

	mu      sync.Mutex
	last    time.Time
	done    map[int]bool // threads set
	stopped bool         // after an error: logged once, not retried
}

func newWorkerPriority(logger *slog.Logger) *workerPriority {
	w := &workerPriority{pid: os.Getpid(), logger: logger, done: map[int]bool{}}
	st, err := procfs.ReadStat(w.pid)
	if err != nil {
		w.stop(err)
		return w
	}
	w.goName = st.Comm
	return w
}

// lower sets the libvips threads started since its last pass, unless
// another pass runs or ran less than workerScanEvery ago. A Go thread is
// read again at each pass: a thread listed before GLib named it still
// carries its creator's name.
func (w *workerPriority) lower() {
	if w == nil || !w.mu.TryLock() {
		return
	}
	defer w.mu.Unlock()
	if w.stopped || time.Since(w.last) < workerScanEvery {
		return
	}
	w.last = time.Now()
	_, err := reniceThreads(pixelNice, w.done, func(tid int) bool {
		st, err := procfs.ReadTaskStat(w.pid, tid)
		return err == nil && st.Comm != w.goName // else ended since the listing
	})
	if err != nil {
		w.stop(err)
	}
}

func (w *workerPriority) stop(err error) {
	w.stopped = true
	w.logger.Warn("engine: libvips' threads keep the server's priority", "err", err)
}
