// Package cellpool keeps the supervisor's cells: a fixed number ready for
// jobs plus spares started ahead, each reused for many jobs and replaced
// past its job count or RSS bound, when it crashes, or when a job's
// deadline kills it. A replacement starts as soon as a cell leaves, so that
// no process start lands on a request's path while a spare is ready.
package cellpool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Config sizes the pool.
type Config struct {
	Spec    cell.Spec
	Cells   int   // cells that may run jobs at once (the admission's slots)
	Spares  int   // cells kept started beyond Cells
	MaxJobs int   // jobs a cell serves before it is replaced
	MaxRSS  int64 // a cell over this RSS after a job is replaced
	// IdleRecycle replaces a cell idle this long whose RSS has grown by
	// more than IdleGrowth since its hello, so that memory a burst left in
	// the cells returns to the system; 0 never does.
	IdleRecycle time.Duration
	IdleGrowth  int64
	Logger      *slog.Logger
}

// Why a cell left the pool: the label of thumbd_cell_exits_total.
const (
	ExitJobs       = "jobs"         // served MaxJobs jobs
	ExitRSS        = "rss"          // over MaxRSS after a job
	ExitCrashInJob = "crash_in_job" // died or broke the protocol during a job (its request failed)
	ExitCrashIdle  = "crash_idle"   // died between jobs (no request affected)
	// said hello, then died before its first job: a crash loop at start,
	// met with the start back-off
	ExitCrashBeforeJob = "crash_before_job"
	ExitDeadline       = "deadline"     // killed because its job's deadline passed or its client left
	ExitIdle           = "idle"         // grown, then idle for IdleRecycle
	ExitStartFailed    = "start_failed" // never said hello
	ExitDrained        = "drained"      // stopped at shutdown
)

// ExitReasons lists every reason a cell leaves the pool.
func ExitReasons() []string {
	return []string{ExitJobs, ExitRSS, ExitIdle, ExitCrashInJob, ExitCrashIdle, ExitCrashBeforeJob, ExitDeadline, ExitStartFailed, ExitDrained}
}

// Pool runs thumbnails on cells. Start it once, Stop it once no job runs.
type Pool struct {
	cfg    Config
	logger *slog.Logger

	mu       sync.Mutex
	idle     []*member // ready, oldest first: jobs go round the cells, so spares are warm too
	all      map[*member]struct{}
	starting int
	stopping bool
	ready    chan struct{} // closed (and replaced) when a cell becomes idle
	stats    counters
	layers   []sandbox.Layer // from the latest hello
	warned   map[string]bool // sandbox layers already warned about

	wake chan struct{} // asks the keeper to top the pool up
	stop chan struct{}
	wg   sync.WaitGroup // the keeper, spawners and exit watchers
	// failing is the back-off while cells fail to start or die before a
	// job (doubling from 100 ms to 5 s; reset by a job served), and
	// holdUntil when the keeper may start the next one.
	failing   time.Duration
	holdUntil time.Time
}

// member is a cell and what the pool knows of it.
type member struct {
	*cell.Cell
	jobs      int
	busy      bool
	retired   bool // the pool let it go
	idleSince time.Time
	startRSS  int64 // right after its hello
	vipsMem   int64
	vipsTop   int64
}

type counters struct {
	started uint64
	exits   map[string]uint64
	crashes map[string]uint64 // cells that died on their own, by how the process ended
	vipsTop int64
}

// New returns a pool; Start starts its cells.
func New(cfg Config) *Pool {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Pool{
		cfg: cfg, logger: cfg.Logger,
		all: map[*member]struct{}{}, ready: make(chan struct{}),
		stats:  counters{exits: map[string]uint64{}, crashes: map[string]uint64{}},
		warned: map[string]bool{},
		wake:   make(chan struct{}, 1), stop: make(chan struct{}),
	}
}

// target is the number of cells the pool keeps.
func (p *Pool) target() int { return p.cfg.Cells + p.cfg.Spares }

// Start starts one cell and waits for it, so that a broken set-up (no
// binary, a sandbox that kills the cell) stops start-up with its reason;
// the other cells start in the background.
func (p *Pool) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cell.Start(ctx, &p.cfg.Spec)
	if err != nil {
		return err
	}
	rss, _ := c.RSS()
	p.mu.Lock()
	p.stats.started++
	p.add(c, rss)
	p.mu.Unlock()
	p.wg.Add(1)
	go p.keep()
	return nil
}

// Run runs one job, a thumbnail or a description, on an idle cell,
// waiting for one within ctx (the pipeline's one engine call).
func (p *Pool) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	var res thumbjob.Result
	err := p.run(ctx, func(m *member) (s cell.Stats, err error) {
		res, s, err = m.Run(ctx, src, job)
		return s, err
	})
	return res, err
}

// run runs one job on an idle cell, waiting for one within ctx, and keeps
// the cell, retires it or lets it go after what the job did.
func (p *Pool) run(ctx context.Context, job func(m *member) (cell.Stats, error)) error {
	m, err := p.take(ctx)
	if err != nil {
		return err
	}
	stats, err := job(m)
	switch {
	case errors.Is(err, cell.ErrCrashed):
		p.mu.Lock()
		if err.(*cell.CrashError).Exit == "protocol" {
			// Killed by the pool for what it sent: its exit is no crash,
			// what it did is.
			p.stats.crashes["protocol"]++
		}
		p.removeLocked(m, ExitCrashInJob)
		p.mu.Unlock()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		// Run returns ctx's error only once it has killed the cell. Asking
		// ctx now instead would also catch a deadline that passed after an
		// answer, and drop a cell that still runs.
		p.leave(m, ExitDeadline)
	default:
		// An image, an engine error (typed or not) or a source over the
		// limit: the cell answered within the protocol, so it stays.
		p.done(m, stats)
	}
	return err
}

// take hands out the oldest idle cell, skipping any that died while idle.
func (p *Pool) take(ctx context.Context) (*member, error) {
	for {
		p.mu.Lock()
		if len(p.idle) > 0 {
			m := p.idle[0]
			p.idle = p.idle[1:]
			m.busy = true
			p.mu.Unlock()
			return m, nil
		}
		ready := p.ready
		p.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// done puts a cell back after a job, or retires it past its bounds.
func (p *Pool) done(m *member, s cell.Stats) {
	rss, rssErr := m.RSS()
	p.mu.Lock()
	defer p.mu.Unlock()
	m.jobs++
	m.busy = false
	p.failing = 0 // cells work
	m.vipsMem, m.vipsTop = s.LibvipsMemory, s.LibvipsPeak
	p.stats.vipsTop = max(p.stats.vipsTop, m.vipsTop)
	select {
	case <-m.Exited():
		// It died as it finished; its watcher found it busy and left it
		// to us.
		p.removeLocked(m, ExitCrashIdle)
		return
	default:
	}
	reason := ""
	if m.jobs >= p.cfg.MaxJobs {
		reason = ExitJobs
	} else if rssErr == nil && rss > p.cfg.MaxRSS {
		reason = ExitRSS
	}
	if reason != "" {
		p.retireLocked(m, reason)
		return
	}
	m.idleSince = time.Now()
	p.idle = append(p.idle, m)
	p.broadcastLocked()
}

// retireLocked lets a healthy cell go: it leaves the pool at once and is
// told to exit.
func (p *Pool) retireLocked(m *member, reason string) {
	p.removeLocked(m, reason)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		m.Close(5 * time.Second)
	}()
}

// leave takes a cell out of the pool (it is ending or will be ended) and
// starts its replacement.
func (p *Pool) leave(m *member, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(m, reason)
}

func (p *Pool) removeLocked(m *member, reason string) {
	if m.retired {
		return
	}
	m.retired = true
	delete(p.all, m)
	for i, x := range p.idle {
		if x == m {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
	}
	p.stats.exits[reason]++
	if reason == ExitCrashIdle {
		p.logger.Warn("cell died between jobs", "cell_pid", m.PID(), "exit", m.Exit(), "jobs", m.jobs)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// add puts a started cell in the pool and watches for its end.
func (p *Pool) add(c *cell.Cell, rss int64) {
	m := &member{Cell: c, idleSince: time.Now(), startRSS: rss}
	p.all[m] = struct{}{}
	p.idle = append(p.idle, m)
	p.noteSandboxLocked(c.Hello().Sandbox)
	p.broadcastLocked()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-c.Exited()
		p.mu.Lock()
		defer p.mu.Unlock()
		// Every death the pool did not cause is counted, whatever the cell
		// was doing (a retiring cell can crash too).
		if c.Crashed() {
			p.stats.crashes[c.Exit()]++
		}
		// A busy cell's end is the job's to report (Run sees the socket
		// close); an idle one died on its own. One that never served a job
		// is a crash at start: its replacement waits, or a cell that dies
		// right after its hello would be restarted in a tight loop.
		if !m.retired && !m.busy {
			if m.jobs == 0 && c.Crashed() {
				p.backOffLocked()
				p.removeLocked(m, ExitCrashBeforeJob)
				return
			}
			p.removeLocked(m, ExitCrashIdle)
		}
	}()
}

// noteSandboxLocked keeps the layers a cell reported and warns once per
// layer that is off.
func (p *Pool) noteSandboxLocked(layers []sandbox.Layer) {
	p.layers = layers
	for _, l := range layers {
		if !l.On && !p.warned[l.Name] {
			p.warned[l.Name] = true
			p.logger.Warn("cell sandbox layer is off", "layer", l.Name, "reason", l.Detail)
		}
	}
}

// backOffLocked doubles the start back-off (100 ms to 5 s) and holds the
// keeper's next start until it has passed.
func (p *Pool) backOffLocked() time.Duration {
	p.failing = min(max(2*p.failing, 100*time.Millisecond), 5*time.Second)
	p.holdUntil = time.Now().Add(p.failing)
	return p.failing
}

func (p *Pool) broadcastLocked() {
	close(p.ready)
	p.ready = make(chan struct{})
}

// keep tops the pool up to its target whenever a cell leaves, and looks
// for grown idle cells every second.
func (p *Pool) keep() {
	defer p.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	hold := time.NewTimer(0)
	defer hold.Stop()
	for {
		p.mu.Lock()
		if wait := time.Until(p.holdUntil); wait > 0 {
			hold.Reset(wait)
		} else {
			for !p.stopping && len(p.all)+p.starting < p.target() {
				p.starting++
				p.wg.Add(1)
				go p.spawn()
			}
		}
		p.mu.Unlock()
		select {
		case <-hold.C:
		case <-p.wake:
		case <-tick.C:
			p.recycleIdle()
		case <-p.stop:
			return
		}
	}
}

// recycleIdle retires cells idle for IdleRecycle whose RSS grew by more
// than IdleGrowth since they started: after a burst of large images the
// cells' memory goes back to the system instead of staying with idle
// processes. Cells that only warmed up stay.
func (p *Pool) recycleIdle() {
	if p.cfg.IdleRecycle <= 0 {
		return
	}
	p.mu.Lock()
	var stale []*member
	for _, m := range p.idle {
		if time.Since(m.idleSince) >= p.cfg.IdleRecycle {
			stale = append(stale, m)
		}
	}
	p.mu.Unlock()
	for _, m := range stale {
		rss, err := m.RSS()
		if err != nil || rss-m.startRSS <= p.cfg.IdleGrowth {
			continue
		}
		p.mu.Lock()
		if !m.busy && !m.retired && !p.stopping {
			p.retireLocked(m, ExitIdle)
		}
		p.mu.Unlock()
	}
}

// spawn starts one cell; after a failure it waits (doubling up to 5 s)
// before the keeper tries again.
func (p *Pool) spawn() {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := cell.Start(ctx, &p.cfg.Spec)
	var rss int64
	if err == nil {
		rss, _ = c.RSS()
	}
	p.mu.Lock()
	p.stats.started++
	var crash *cell.CrashError
	if errors.As(err, &crash) {
		p.stats.crashes[crash.Exit]++
	}
	if err != nil && p.stopping {
		// Abandoned by Stop, not a failure.
		p.stats.exits[ExitDrained]++
		p.starting--
		p.mu.Unlock()
		return
	}
	if err != nil {
		p.stats.exits[ExitStartFailed]++
		wait := p.backOffLocked()
		p.mu.Unlock()
		p.logger.Error("cell did not start", "err", err, "retry_in", wait.String())
		select {
		case <-time.After(wait):
		case <-p.stop:
		}
		p.mu.Lock()
		p.starting--
		p.mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return
	}
	p.starting--
	if p.stopping {
		p.stats.exits[ExitDrained]++
		p.mu.Unlock()
		c.Close(time.Second)
		return
	}
	p.add(c, rss)
	p.mu.Unlock()
}

// Stop drains the pool once no job runs: idle cells are told to leave (and
// killed after a grace), starting ones are abandoned, and Stop returns when
// every cell process has been reaped.
func (p *Pool) Stop() {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	close(p.stop)
	var leaving []*member
	for m := range p.all {
		leaving = append(leaving, m)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range leaving {
		p.leave(m, ExitDrained)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Close(5 * time.Second)
		}()
	}
	wg.Wait()
	p.wg.Wait()
}

// Memory is libvips' tracked allocations: the live cells' sum as they last
// reported it, and the highest any one cell reported.
func (p *Pool) Memory() (current, peak int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for m := range p.all {
		current += m.vipsMem
	}
	return current, p.stats.vipsTop
}

// Layers is the sandbox the cells run in, as the latest one reported it.
func (p *Pool) Layers() []sandbox.Layer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sandbox.Layer(nil), p.layers...)
}

// Stats is a snapshot of the pool for metrics.
type Stats struct {
	Starting, Idle, Busy int
	Started              uint64
	Exits                map[string]uint64 // by reason (the Exit constants)
	Crashes              map[string]uint64 // by how the process ended ("signal SIGSEGV")
	RSS                  int64             // resident memory of the live cells
	LibvipsMemory        int64             // libvips' tracked allocations summed over live cells, as last reported
	LibvipsPeak          int64             // the highest any one cell reported
	StartBackOff         time.Duration     // the wait before the next start while cells fail at start; 0 once a job is served
	PIDs                 []int             // live cells
	BusyPIDs             []int             // live cells running a job
}

// Stats reads the pool's counters and the live cells' RSS.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	s := Stats{Starting: p.starting, Idle: len(p.idle), Started: p.stats.started,
		Exits: map[string]uint64{}, Crashes: map[string]uint64{}, LibvipsPeak: p.stats.vipsTop, StartBackOff: p.failing}
	for k, v := range p.stats.exits {
		s.Exits[k] = v
	}
	for k, v := range p.stats.crashes {
		s.Crashes[k] = v
	}
	var live []*member
	for m := range p.all {
		live = append(live, m)
		if m.busy {
			s.Busy++
			s.BusyPIDs = append(s.BusyPIDs, m.PID())
		}
		s.LibvipsMemory += m.vipsMem
		s.PIDs = append(s.PIDs, m.PID())
	}
	p.mu.Unlock()
	for _, m := range live {
		if rss, err := m.RSS(); err == nil {
			s.RSS += rss
		}
	}
	return s
}
