package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/cellpool"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// cellAddressSpace is how much address space a cell may map beyond what it
// has mapped once libvips is up: the largest job at the default limits
// (a 40 MP source) peaked under 600 MiB of address space here, and glibc
// reserves 64 MiB per malloc arena. A runaway allocation fails there
// instead of growing until the pod's OOM killer picks a victim.
const cellAddressSpace = 4 << 30

// cellIdleGrowth is how much a cell may grow over its start-up RSS and
// still be kept when idle. Measured on the static build, a cell grows by
// 6 MiB over 20 small thumbnails (warm: worth keeping for the next ones),
// 12 MiB over 20 web-sized photos, 31 MiB over five 4000x3000 JPEGs and
// 56 MiB over three 4000x3000 PNGs: memory glibc keeps after large images,
// which only a new process gives back.
const cellIdleGrowth = 8 << 20

// cellOpenFiles is RLIMIT_NOFILE in a cell: its socket, stdio, the Go
// runtime's poller, and nothing it opens (it cannot open files).
const cellOpenFiles = 32

// cellEnviron is what a cell inherits of environ: the allocator's
// variables (MALLOC_ARENA_MAX, an LD_PRELOADed jemalloc), libvips' and
// GLib's, and the Go runtime's. Everything else, secrets included, stays
// in the supervisor.
func cellEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if slices.ContainsFunc([]string{"MALLOC_", "LD_", "VIPS_", "G_"}, func(p string) bool { return strings.HasPrefix(name, p) }) ||
			slices.Contains([]string{"GODEBUG", "GOGC", "GOMEMLIMIT", "GOTRACEBACK", "GORACE"}, name) {
			out = append(out, kv)
		}
	}
	return out
}

// runCell is `thumbd cell`, the worker process of cells mode, started by
// the supervisor with its socket on descriptor 3. It is not for people.
func runCell(getenv func(string) string, stderr io.Writer) error {
	return serveCell(getenv, stderr, func(e cell.Engine) cell.Engine { return e })
}

// serveCell starts libvips, seals the process in its sandbox, says hello
// and serves jobs until the supervisor closes the socket. wrap lets tests
// put a fault injector around the engine.
func serveCell(getenv func(string) string, stderr io.Writer, wrap func(cell.Engine) cell.Engine) error {
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
	set.Engine.Logger = logger
	eng := thumb.New(set.Engine)
	eng.Start()
	layers := sandbox.Apply(sandbox.Config{AddressSpace: cellAddressSpace, OpenFiles: cellOpenFiles})
	w := cell.Worker{Engine: wrap(eng), MaxSource: set.MaxSource, Memory: thumb.Memory}
	return w.Serve(conn, cell.Hello{PID: os.Getpid(), Libvips: thumb.Version(), Sandbox: layers})
}

// cellPoolConfig is the pool of cells mode: the cells are this binary
// again, told the engine's limits; their log lines join the supervisor's.
func cellPoolConfig(cfg config, logger *slog.Logger, logOut io.Writer) (cellpool.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return cellpool.Config{}, fmt.Errorf("cells: the thumbd binary: %w", err)
	}
	set, err := cell.Settings{Engine: engineConfig(cfg, nil), MaxSource: cfg.MaxBodyBytes, LogLevel: cfg.LogLevel}.Env()
	if err != nil {
		return cellpool.Config{}, err
	}
	env := append(cellEnviron(os.Environ()), set)
	return cellpool.Config{
		Spec: cell.Spec{
			Path:      exe,
			Args:      []string{"cell"},
			Env:       env,
			Stderr:    logOut,
			MaxSource: cfg.MaxBodyBytes,
			// An encoded image is never larger than its raw RGBA pixels,
			// plus the format's headers.
			MaxResult: 4*int64(cfg.MaxSide)*int64(cfg.MaxSide) + 1<<20,
			MaxSide:   cfg.MaxSide,
		},
		Cells:       cfg.Concurrency,
		Spares:      cfg.CellSpares,
		MaxJobs:     cfg.CellJobs,
		MaxRSS:      cfg.CellMaxRSS,
		IdleRecycle: cfg.CellIdleRecycle,
		IdleGrowth:  cellIdleGrowth,
		Logger:      logger,
	}, nil
}

// cellMetrics exposes the pool (cells mode) and the sandbox its cells run
// in: read from the pool at each scrape, so the pool needs no Prometheus.
type cellMetrics struct {
	pool                                      *cellpool.Pool // nil in process
	cells, starts, exits, crashes, rss, layer *prometheus.Desc
}

func newCellMetrics(pool *cellpool.Pool) *cellMetrics {
	return &cellMetrics{
		pool:    pool,
		cells:   prometheus.NewDesc("thumbd_cells", "Cells (cells mode), by state: starting, idle, busy.", []string{"state"}, nil),
		starts:  prometheus.NewDesc("thumbd_cell_starts_total", "Cell processes started (cells mode).", nil, nil),
		exits:   prometheus.NewDesc("thumbd_cell_exits_total", "Cells that left the pool (cells mode), by reason.", []string{"reason"}, nil),
		crashes: prometheus.NewDesc("thumbd_cell_crashes_total", "Cells that died on their own or broke the protocol (cells mode), by how they ended.", []string{"exit"}, nil),
		rss:     prometheus.NewDesc("thumbd_cell_resident_memory_bytes", "Resident memory of the live cells, summed (cells mode).", nil, nil),
		layer:   prometheus.NewDesc("thumbd_sandbox_layer", "1 when the cells run with this sandbox layer on, 0 when it is off or there are no cells (in process).", []string{"layer"}, nil),
	}
}

func (m *cellMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.cells, m.starts, m.exits, m.crashes, m.rss, m.layer} {
		ch <- d
	}
}

func (m *cellMetrics) Collect(ch chan<- prometheus.Metric) {
	on := map[string]bool{}
	if m.pool != nil {
		for _, l := range m.pool.Layers() {
			on[l.Name] = l.On
		}
	}
	for _, name := range sandbox.Names() {
		v := 0.0
		if on[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.layer, prometheus.GaugeValue, v, name)
	}
	if m.pool == nil {
		return
	}
	s := m.pool.Stats()
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Starting), "starting")
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Busy), "busy")
	ch <- prometheus.MustNewConstMetric(m.starts, prometheus.CounterValue, float64(s.Started))
	for _, reason := range cellpool.ExitReasons() {
		ch <- prometheus.MustNewConstMetric(m.exits, prometheus.CounterValue, float64(s.Exits[reason]), reason)
	}
	for exit, n := range s.Crashes {
		ch <- prometheus.MustNewConstMetric(m.crashes, prometheus.CounterValue, float64(n), exit)
	}
	ch <- prometheus.MustNewConstMetric(m.rss, prometheus.GaugeValue, float64(s.RSS))
}
