// Package engines is thumbd's two engine modes behind the pipeline's
// engine seam: libvips in the HTTP process (InProcess), or in sandboxed
// worker processes (Cells, whose worker is ServeCell, `thumbd cell`), and
// the cells' and sandbox's metrics.
package engines

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/cellpool"
	"github.com/thumbd/thumbd/service/internal/glibcmalloc"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Engine runs the pipeline's jobs (its one call, Run, is the pipeline's
// engine seam): libvips in this process (InProcess), or in sandboxed
// worker processes (Cells). Start once, Stop once no job runs any more.
type Engine interface {
	// Run runs one job, a thumbnail or a description.
	Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error)
	Start() error
	Stop()
	// Memory is libvips' tracked allocations, current and peak; called
	// only once Start has returned.
	Memory() (current, peak int64)
	// Collector is the mode's own metrics, registered with the service's.
	Collector() prometheus.Collector
}

// InProcess is libvips in the HTTP process.
type InProcess struct{ *thumb.Engine }

func (e InProcess) Start() error {
	e.Engine.Start()
	if err := e.Engine.LoadWatermark(); err != nil {
		return fmt.Errorf("THUMBD_WATERMARK: %w", err)
	}
	return nil
}

func (InProcess) Memory() (current, peak int64) { return thumb.Memory() }

// Collector reports the cells' metrics with no pool: every sandbox layer
// off, so that the series exist in both modes.
func (InProcess) Collector() prometheus.Collector { return newCellMetrics(nil) }

// Cells is cells mode's engine: the pool of cells, which also brings its
// metrics.
type Cells struct{ *cellpool.Pool }

func (e Cells) Collector() prometheus.Collector { return newCellMetrics(e.Pool) }

// cellIdleGrowth is how much a cell may grow over its start-up RSS and
// still be kept when idle. Measured on the static build, a cell grows by
// 6 MiB over 20 small thumbnails (warm: worth keeping for the next ones),
// 12 MiB over 20 web-sized photos, 31 MiB over five 4000x3000 JPEGs and
// 56 MiB over three 4000x3000 PNGs: memory glibc keeps after large images,
// which only a new process gives back.
const cellIdleGrowth = 8 << 20

// cellEnviron is what a cell inherits of environ: the allocator's
// variables (MALLOC_ARENA_MAX, GLIBC_TUNABLES, an LD_PRELOADed jemalloc),
// libvips' and GLib's, and the Go runtime's. Everything else, secrets
// included, stays in the supervisor.
//
// Without GLIBC_TUNABLES a cell is given thumbd's (glibcmalloc.Tunables):
// glibc reads it only at a process's start, and a cell's start is thumbd's
// to make, so a cell has malloc's huge pages even when the supervisor,
// started by hand, has not.
//
// GODEBUG gains containermaxprocs=0 (a later setting wins): otherwise the
// cell's Go runtime opens its cgroup's CPU limit files at start and keeps
// them open for good, two descriptors a cell has no use for (it runs with
// GOMAXPROCS 1 and reads no file once sandboxed).
func cellEnviron(environ []string) []string {
	var out []string
	godebug := "GODEBUG=containermaxprocs=0"
	tunables := "GLIBC_TUNABLES=" + glibcmalloc.Tunables()
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "GODEBUG" && value != "":
			godebug = kv + ",containermaxprocs=0"
		case name == "GLIBC_TUNABLES":
			tunables = kv
		case slices.ContainsFunc([]string{"MALLOC_", "LD_", "VIPS_", "G_"}, func(p string) bool { return strings.HasPrefix(name, p) }) ||
			slices.Contains([]string{"GOGC", "GOMEMLIMIT", "GOTRACEBACK", "GORACE"}, name):
			out = append(out, kv)
		}
	}
	return append(out, tunables, godebug)
}

// CellSettings are what cells mode reads of the settings.
type CellSettings struct {
	Engine             thumbjob.Config // the limits a cell's engine is told
	MaxSource          int64           // THUMBD_MAX_BODY_BYTES
	MaxSide            int
	MaxAnimationPixels int64
	LogLevel           slog.Level
	MemoryBudget       int64 // bounds a cell's address space
	SandboxRequired    bool
	Cells, Spares      int // THUMBD_CONCURRENCY, THUMBD_CELL_SPARES
	MaxJobs            int
	MaxRSS             int64
	IdleRecycle        time.Duration
}

// NewCells is cells mode's engine, not started: the inherited descriptors
// sealed, the pool configured.
func NewCells(cfg CellSettings, logger *slog.Logger, logOut io.Writer) (Engine, error) {
	if err := cell.SealInherited(); err != nil {
		return nil, fmt.Errorf("cells: %w", err)
	}
	pc, err := PoolConfig(cfg, logger, logOut)
	if err != nil {
		return nil, err
	}
	return Cells{cellpool.New(pc)}, nil
}

// PoolConfig is the pool of cells mode: the cells are this binary again,
// told the engine's limits; their log lines join the supervisor's.
func PoolConfig(cfg CellSettings, logger *slog.Logger, logOut io.Writer) (cellpool.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return cellpool.Config{}, fmt.Errorf("cells: the thumbd binary: %w", err)
	}
	set, err := cell.Settings{Engine: cfg.Engine, MaxSource: cfg.MaxSource, LogLevel: cfg.LogLevel,
		AddressSpace: cellsAddressSpace(cfg.MemoryBudget)}.Env()
	if err != nil {
		return cellpool.Config{}, err
	}
	env := append(cellEnviron(os.Environ()), set)
	return cellpool.Config{
		Spec: cell.Spec{
			Path:               exe,
			Args:               []string{"cell"},
			Env:                env,
			Stderr:             logOut,
			RequireSandbox:     cfg.SandboxRequired,
			MaxSource:          cfg.MaxSource,
			MaxSide:            cfg.MaxSide,
			MaxAnimationPixels: cfg.MaxAnimationPixels,
		},
		Cells:       cfg.Cells,
		Spares:      cfg.Spares,
		MaxJobs:     cfg.MaxJobs,
		MaxRSS:      cfg.MaxRSS,
		IdleRecycle: cfg.IdleRecycle,
		IdleGrowth:  cellIdleGrowth,
		Logger:      logger,
	}, nil
}

// cellsAddressSpace is a cell's RLIMIT_AS beyond its start-up mappings,
// from the jobs' memory budget: a job is admitted only when its estimated
// peak fits the budget, so a cell never needs more than the budget plus
// what glibc and libvips reserve without touching (arenas of 64 MiB, thread
// stacks): 512 MiB measured enough for every job of the estimate's
// calibration. A job that outgrows its estimate fails its allocation in
// its cell (a 500 engine_crashed) instead of meeting the OOM killer.
func cellsAddressSpace(budget int64) uint64 {
	return uint64(min(max(budget, 0)+512<<20, 4<<30))
}
