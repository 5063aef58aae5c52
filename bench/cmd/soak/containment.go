package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
)

// containment is the cells mode's figures: what was killed, what it cost,
// and what was left after.
type containment struct {
	Kills        int `json:"kills"`
	KillsBusy    int `json:"kills_seen_busy"` // the cell's CPU time was moving when picked
	CrashAnswers int `json:"engine_crashed_answers"`
	// From thumbd's /metrics once the load is over.
	CrashedInJob   int            `json:"cells_crashed_in_job"`
	CrashedIdle    int            `json:"cells_crashed_idle"`
	StartFailed    int            `json:"cells_start_failed"`
	SIGSEGVDeaths  int            `json:"cells_sigsegv_deaths"`
	Deaths         int            `json:"cells_died_on_their_own"` // every exit thumbd counts as a crash
	Exits          map[string]int `json:"cell_exits"`
	CellsAfter     int            `json:"cells_after"`
	ZombiesAfter   int            `json:"zombies_after"`
	FDsStart       int            `json:"supervisor_fds_start"` // descriptors other than TCP sockets
	FDsAfter       int            `json:"supervisor_fds_after"`
	SupervisorRSS  []int64        `json:"supervisor_rss_per_second"`
	HeavyFrom      int            `json:"heavy_mix_from_second"` // SupervisorRSS's index where the heavy mix began
	TotalRSSStart  int64          `json:"total_rss_start"`       // supervisor + cells, idle after start
	TotalRSSPeak   int64          `json:"total_rss_peak"`
	TotalRSSAfter  int64          `json:"total_rss_after"`
	CellsRSSAfter  int64          `json:"cells_rss_after"`
	ReturnSeconds  float64        `json:"seconds_to_return"`
	ExpectedCells  int            `json:"expected_cells"`
	IdleRecycleSec float64        `json:"idle_recycle_s"`
}

// containmentMode runs thumbd in cells mode under the load mode's clients
// while a random cell is killed by SIGSEGV every -kill-every, then, kills
// going on, a heavy mix (-heavy: 4000x3000 JPEGs) from -heavy-clients
// clients, fewer than the admission's places, so that no large upload is
// refused half-sent. It checks that the kills cost exactly their in-flight
// jobs: every failed answer is a 500 engine_crashed, as many as the cells
// thumbd saw die in a job; every SIGSEGV is counted as a crash; /health
// answers throughout; afterwards no cell, zombie or descriptor is left
// over, the supervisor's RSS stayed flat, and once the grown cells are
// recycled the total RSS is back within 20% of its level after start.
func containmentMode(o options, srcs, heavy [][]byte) (*result, error) {
	const cells, spares, idleRecycle = 2, 1, 10 * time.Second
	p, err := startThumbd(o, "arena2", "THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY="+strconv.Itoa(cells),
		"THUMBD_CELL_SPARES="+strconv.Itoa(spares), "THUMBD_CELL_IDLE_RECYCLE="+idleRecycle.String())
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "containment", Malloc: "arena2", Clients: o.clients, Backoff: o.backoff}
	c := &containment{Exits: map[string]int{}, ExpectedCells: cells + spares, IdleRecycleSec: idleRecycle.Seconds()}
	r.Containment = c
	if !waitFor(30*time.Second, func() bool { return len(livingChildren(p.pid)) == c.ExpectedCells }) {
		r.fail("the cells never all started")
	}
	time.Sleep(2 * time.Second)
	c.TotalRSSStart = totalRSS(p.pid)
	c.FDsStart = nonTCPFDs(p.pid)

	if len(heavy) == 0 {
		o.heavyFor = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	health := &healthPoller{}
	hWG := pollHealth(ctx, p.base, health)
	var kmu sync.Mutex
	var kWG sync.WaitGroup
	kWG.Add(1)
	go func() {
		defer kWG.Done()
		t := time.NewTicker(o.killEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if st, err := procfs.Read(p.pid); err == nil {
				c.SupervisorRSS = append(c.SupervisorRSS, st.VmRSS)
			}
			c.TotalRSSPeak = max(c.TotalRSSPeak, totalRSS(p.pid))
			victim, busy := pickCell(p.pid)
			if victim == 0 {
				continue
			}
			if syscall.Kill(victim, syscall.SIGSEGV) == nil {
				kmu.Lock()
				c.Kills++
				if busy {
					c.KillsBusy++
				}
				kmu.Unlock()
			}
		}
	}()
	rec := &recorder{}
	start := time.Now()
	loadCtx, loadCancel := context.WithTimeout(ctx, o.duration-o.heavyFor)
	wg := loadClients(loadCtx, p.base, o.query, o.clients, srcs, o.deadline+30*time.Second, o.backoff, rec)
	wg.Wait()
	loadCancel()
	c.HeavyFrom = len(c.SupervisorRSS)
	if len(heavy) > 0 {
		wg = loadClients(ctx, p.base, o.query, o.heavyClients, heavy, o.deadline+30*time.Second, o.backoff, rec)
		wg.Wait()
	}
	cancel()
	r.Seconds = time.Since(start).Seconds()
	hWG.Wait()
	kWG.Wait()
	r.HealthPolls, r.HealthFails = int(health.polls.Load()), int(health.fails.Load())
	r.HealthMaxMs = float64(time.Duration(health.maxNs.Load()).Microseconds()) / 1000
	if gone, how := p.exited(); gone {
		r.fail("thumbd exited during the load (%s)", how)
		return r, nil
	}

	// The pool settles: every cell replaced, none starting. The last kill
	// takes a moment to be seen (the process dies, is reaped, its watcher
	// counts it): give it that before looking.
	time.Sleep(2 * time.Second)
	settled := waitFor(30*time.Second, func() bool {
		m := scrape(p.base)
		return m[`thumbd_cells{state="starting"}`] == 0 && m[`thumbd_cells{state="busy"}`] == 0 &&
			int(m[`thumbd_cells{state="idle"}`]) == c.ExpectedCells
	})
	m := scrape(p.base)
	c.CrashedInJob, c.CrashedIdle = int(m[`thumbd_cell_exits_total{reason="crash_in_job"}`]), int(m[`thumbd_cell_exits_total{reason="crash_idle"}`])
	c.StartFailed, c.SIGSEGVDeaths = int(m[`thumbd_cell_exits_total{reason="start_failed"}`]), int(m[`thumbd_cell_crashes_total{exit="signal SIGSEGV"}`])
	for k, v := range m {
		if strings.HasPrefix(k, "thumbd_cell_crashes_total{") {
			c.Deaths += int(v)
		}
		if reason, ok := strings.CutPrefix(k, `thumbd_cell_exits_total{reason="`); ok {
			c.Exits[strings.TrimSuffix(reason, `"}`)] = int(v)
		}
	}
	// Memory: the grown cells are recycled once idle; wait for the total to
	// come back (or give up after a minute past the idle time).
	back := time.Now()
	returned := waitFor(idleRecycle+60*time.Second, func() bool {
		return totalRSS(p.pid) <= c.TotalRSSStart*12/10
	})
	c.ReturnSeconds = time.Since(back).Seconds()
	// Memory comes back when grown cells are recycled, so the moment it
	// does is the moment old cells exit and new ones start: a child seen
	// then may be a zombie for the microseconds before its watcher reaps
	// it, or a replacement not yet counted. Let the pool settle again
	// (a leak is what is still there seconds later).
	waitFor(10*time.Second, func() bool {
		kids := children(p.pid)
		return zombies(kids) == 0 && len(kids) == c.ExpectedCells
	})
	c.TotalRSSAfter = totalRSS(p.pid)
	c.CellsRSSAfter, _ = procfs.ChildrenRSS(p.pid)
	http.DefaultClient.CloseIdleConnections()
	kids := children(p.pid)
	c.CellsAfter, c.ZombiesAfter = len(kids), zombies(kids)
	c.FDsAfter = nonTCPFDs(p.pid)

	summarise(r, rec, o, p)
	checkContainedAnswers(r, rec, p)
	checkContainment(r, c, settled, returned)
	if r.HealthFails > 0 {
		r.fail("/health failed %d of %d polls (first: %v)", r.HealthFails, r.HealthPolls, health.firstFail.Load())
	}
	if r.Statuses["200"] == 0 {
		r.fail("no thumbnail succeeded")
	}
	return r, nil
}

// checkContainment holds the figures to the mode's promises.
func checkContainment(r *result, c *containment, settled, returned bool) {
	c.CrashAnswers = r.Statuses["500 engine_crashed"]
	if c.Kills == 0 {
		r.fail("no cell was killed")
	}
	if c.SIGSEGVDeaths != c.Kills || c.Deaths != c.Kills {
		r.fail("%d SIGSEGVs sent, thumbd counted %d cells dead by SIGSEGV and %d crashes in all", c.Kills, c.SIGSEGVDeaths, c.Deaths)
	}
	if c.CrashAnswers != c.CrashedInJob {
		r.fail("%d answers engine_crashed, thumbd saw %d cells die in a job", c.CrashAnswers, c.CrashedInJob)
	}
	if c.CrashedInJob+c.CrashedIdle+c.StartFailed != c.Kills {
		r.fail("%d kills, but %d in a job + %d idle + %d starting", c.Kills, c.CrashedInJob, c.CrashedIdle, c.StartFailed)
	}
	if !settled || c.CellsAfter != c.ExpectedCells {
		r.fail("%d cells after the load, want %d", c.CellsAfter, c.ExpectedCells)
	}
	if c.ZombiesAfter > 0 {
		r.fail("%d zombie cells", c.ZombiesAfter)
	}
	if c.FDsAfter != c.FDsStart {
		r.fail("the supervisor holds %d descriptors (TCP aside), %d after start", c.FDsAfter, c.FDsStart)
	}
	// Flat: under the steady mix, the supervisor's RSS in the last third is
	// within 25% of the first third (the warm-up ninth aside). The heavy
	// mix's sources are bigger by design.
	steady := c.SupervisorRSS
	if c.HeavyFrom > 0 && c.HeavyFrom < len(steady) {
		steady = steady[:c.HeavyFrom]
	}
	if n := len(steady); n >= 9 {
		first, last := slices.Max(steady[n/9:n/3]), slices.Max(steady[2*n/3:])
		if last > first*5/4 {
			r.fail("the supervisor's RSS grew: %s at most in the first third of the load, %s in the last", mib(first), mib(last))
		}
	}
	if !returned {
		r.fail("total RSS %s, not back within 20%% of %s after start", mib(c.TotalRSSAfter), mib(c.TotalRSSStart))
	}
	r.note("kills %d (%d seen busy): %d in a job = %d engine_crashed answers, %d idle, %d during start; %d SIGSEGV deaths counted, %d crashes in all",
		c.Kills, c.KillsBusy, c.CrashedInJob, c.CrashAnswers, c.CrashedIdle, c.StartFailed, c.SIGSEGVDeaths, c.Deaths)
	if len(c.SupervisorRSS) > 0 {
		r.note("supervisor RSS sampled every second under load: %s to %s", mib(slices.Min(c.SupervisorRSS)), mib(slices.Max(c.SupervisorRSS)))
	}
	r.note("total RSS (supervisor + cells): %s after start, %s at the peak, %s %.0f s after the load (cells %s)",
		mib(c.TotalRSSStart), mib(c.TotalRSSPeak), mib(c.TotalRSSAfter), c.ReturnSeconds, mib(c.CellsRSSAfter))
}

// checkContainedAnswers is checkAnswers for cells mode: a 500 is allowed
// when it is engine_crashed (a killed cell's job), and is counted apart.
func checkContainedAnswers(r *result, rec *recorder, p *proc) {
	for i, x := range rec.all {
		if x.kind == "answer" && x.status == 500 && x.code == "engine_crashed" {
			rec.all[i].status = 0 // not a failure of checkAnswers' kind
			r.Statuses["500"]--
			r.Statuses["500 engine_crashed"]++
		}
	}
	if r.Statuses["500"] == 0 {
		delete(r.Statuses, "500")
	}
	checkAnswers(r, rec, p, false)
}

// pickCell picks a random cell of the supervisor, preferring one whose CPU
// time moves (running a job): a kill should land in a job, though the
// figures are checked either way. A child younger than two seconds is left
// alone: it may still be between fork and exec (a copy of the supervisor),
// or a Go runtime that has not yet handed SIGSEGV back to the kernel.
func pickCell(pid int) (victim int, busy bool) {
	kids := slices.DeleteFunc(livingChildren(pid), func(k int) bool { return procfs.Age(k) < 2*time.Second })
	if len(kids) == 0 {
		return 0, false
	}
	before := map[int]time.Duration{}
	for _, k := range kids {
		before[k], _ = procfs.CPUTime(k)
	}
	time.Sleep(20 * time.Millisecond)
	var moving []int
	for _, k := range kids {
		if t, err := procfs.CPUTime(k); err == nil && t > before[k] {
			moving = append(moving, k)
		}
	}
	if len(moving) > 0 {
		return moving[rand.IntN(len(moving))], true
	}
	return kids[rand.IntN(len(kids))], false
}

func children(pid int) []int {
	kids, _ := procfs.Children(pid)
	return kids
}

func livingChildren(pid int) []int {
	return slices.DeleteFunc(children(pid), func(k int) bool { return procfs.State(k) == "Z" })
}

// zombies counts the processes of pids that have exited and wait to be
// reaped.
func zombies(pids []int) int {
	n := 0
	for _, k := range pids {
		if procfs.State(k) == "Z" {
			n++
		}
	}
	return n
}

// totalRSS is the supervisor's VmRSS plus its cells'.
func totalRSS(pid int) int64 {
	st, err := procfs.Read(pid)
	if err != nil {
		return 0
	}
	kids, _ := procfs.ChildrenRSS(pid)
	return st.VmRSS + kids
}

// nonTCPFDs counts pid's descriptors that are not TCP sockets (those come
// and go with clients): stdio, the poller, the cells' sockets and pipes.
func nonTCPFDs(pid int) int {
	tcp, _ := procfs.TCPSockets(pid)
	fds, _ := procfs.FDTargets(pid)
	n := 0
	for _, target := range fds {
		if !tcp[target] {
			n++
		}
	}
	return n
}

// scrape reads thumbd's /metrics into name{labels} -> value.
func scrape(base string) map[string]float64 {
	metricLine := regexp.MustCompile(`^(thumbd_[a-z_]+(?:\{[^}]*\})?) (\S+)$`)
	out := map[string]float64{}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if m := metricLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			out[m[1]] = v
		}
	}
	return out
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}
