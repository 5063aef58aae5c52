// Package report renders a results document as the Markdown report: the
// study's tables, each metric for each target with its ratio to a baseline.
package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/thumbd/thumbd/bench/internal/cellarms"
	"github.com/thumbd/thumbd/bench/internal/results"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
)

// Figure is a chart file next to the report.
type Figure struct {
	Title string
	File  string
}

// Render returns the report.
func Render(r *results.Results, figs []Figure) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	mode := ""
	if r.Options.Quick {
		mode = " (quick smoke run: figures are not meaningful)"
	}
	w("# thumbd bench report, %s%s\n\n", r.Started.Format("2006-01-02 15:04 MST"), mode)
	w("Produced by `%s` (results schema `%s`, raw figures in `results.json`). ", r.Command, r.Schema)
	w("Ratios are against **%s**. MB are 10^6 bytes; times are milliseconds.\n\n", r.Baseline)

	machineSection(w, r)
	targetsSection(w, r)
	contractSection(w, r)
	startupSection(w, r)
	idleSection(w, r)
	loadSection(w, r)
	cellsSection(w, r)
	imageSection(w, r)
	goalsSection(w, r)
	cellGoalsSection(w, r)
	if len(figs) > 0 {
		w("## Charts\n\n")
		for _, f := range figs {
			w("![%s](%s)\n\n", f.Title, f.File)
		}
	}
	return b.String()
}

type writer func(format string, a ...any)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func mb(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/1e6)
}

func ms(x float64) string {
	if x <= 0 || math.IsNaN(x) {
		return "-"
	}
	if x < 10 {
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// ratio formats x = baseline/target for a figure where smaller is better
// (a time, a size): "3.10× faster" or, below 1, "2.00× slower".
// ciNote says what the confidence intervals are, where they appear.
const ciNote = "The 95% confidence interval of a median is the bootstrap's (percentile method, 2,000 resamples of the runs or the answers, drawn the same way on every redraw): how far the median could move in another run like this one, machine noise aside."

// ci formats a median's confidence interval; "-" when there is none.
func ci(lo, hi float64) string {
	if !(lo > 0) || !(hi > 0) {
		return "-"
	}
	return ms(lo) + "–" + ms(hi)
}

func ratio(x float64, better, worse string) string {
	switch {
	case x <= 0:
		return "-"
	case x >= 1:
		return fmt.Sprintf("%.2f× %s", x, better)
	default:
		return fmt.Sprintf("%.2f× %s", 1/x, worse)
	}
}

func machineSection(w writer, r *results.Results) {
	m := r.Machine
	w("## Machine and settings\n\n| | |\n|---|---|\n")
	w("| CPU | %s, %d cores |\n", orDash(m.CPU), m.Cores)
	w("| memory | %s GB |\n", mb(m.MemoryBytes/1000))
	w("| kernel | %s |\n| OS | %s |\n", orDash(m.Kernel), orDash(m.OS))
	w("| Go | %s |\n| Node.js | %s |\n", orDash(m.Go), orDash(m.Node))
	w("| libvips (system, bin/thumbd) | %s |\n", orDash(m.Libvips))
	w("| sharp / its bundled libvips (Node twin) | %s / %s |\n", orDash(m.Sharp), orDash(m.SharpLibvips))
	w("| Docker | %s |\n", orDash(m.Docker))
	o := r.Options
	if o.Pinned {
		w("| pinning | servers on CPU %s (processes spawned with that affinity mask, containers with `--cpuset-cpus`), the driver and its load generator on CPU %s (every thread, `sched_setaffinity`). A server pinned to one CPU sees one CPU: Go sets GOMAXPROCS from the affinity mask, so thumbd runs one libvips job at a time |\n", o.ServerCPUs, o.ClientCPUs)
	} else {
		w("| pinning | none: servers and the load generator share every CPU |\n")
	}
	w("| startup | %d fresh starts per target, interleaved; /health polled every %.2f ms over raw TCP from inside the driver |\n", o.StartupRuns, o.PollInterval)
	w("| idle memory | read from /proc/PID/status %.1f s after the first /health (containers: their main process) |\n", o.SettleSeconds)
	w("| load | hey's requester, %s clients, %.0f s per step after a %.1f s warm-up at the same concurrency (excluded), targets interleaved per step (A B A B), %d round(s) per step, containers on the %s network; only 2xx answers count as throughput |\n",
		joinInts(o.Concurrency), o.StepSeconds, o.WarmupSeconds, max(o.Rounds, 1), o.DockerNetwork)
	w("| started / finished | %s / %s |\n\n", r.Started.Format("2006-01-02 15:04:05 MST"), r.Finished.Format("15:04:05 MST"))
	for _, n := range r.Notes {
		w("> **Note:** %s\n\n", n)
	}
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, "/")
}

func targetsSection(w writer, r *results.Results) {
	w("## Targets\n\n| target | kind | runs as | libvips | CPUs allowed | status |\n|---|---|---|---|---|---|\n")
	for _, t := range r.Targets {
		status := "measured"
		if t.Skipped != "" {
			status = "**not measured**: " + t.Skipped
		}
		w("| %s | %s | `%s` | %s | %s | %s |\n", t.Name, t.Kind, t.Spec.String(), orDash(t.Libvips), orDash(t.Allowed), status)
	}
	w("\n")
}

// isThumb tells a thumbnail route (thumb-SOURCE[-FORMAT]) from the others.
func isThumb(id string) bool { return strings.HasPrefix(id, "thumb-") }

func contractSection(w writer, r *results.Results) {
	if len(r.Contract) == 0 {
		return
	}
	basic := []string{"health", "json", "compute", "hash"}
	var thumbs []results.Route
	for _, rt := range r.Routes {
		if isThumb(rt.ID) {
			thumbs = append(thumbs, rt)
		}
	}
	w("## Contract check (before any timing)\n\n")
	w("`/json` must equal `service/testdata/json-document.json`; `/compute` (default and `n=12345`) and `/hash` (default payload and a percent-encoded `data`) must equal the values the driver computes itself; every thumbnail route's `/thumbnail` must be a 256x256 image of its format that decodes (`image/png`, `image/jpeg` and `golang.org/x/image/webp` in Go; AVIF with Debian's `vips` command), and an animated route an animated WebP with every frame of its GIF, each decodable and shown as long, and the GIF's loop count. A route that fails is not timed for that target.\n\n")
	w("| target | %s | thumbnails | sha256 prefix of /json |\n|---|%s---|---|\n", strings.Join(basic, " | "), strings.Repeat("---|", len(basic)))
	var failures []string
	outBytes := map[string]map[string]int{} // target -> route -> bytes
	for _, c := range r.Contract {
		if c.Error != "" {
			w("| %s |%s ✗ | %s |\n", c.Target, strings.Repeat(" ✗ |", len(basic)), c.Error)
			continue
		}
		okBy := map[string]string{}
		digest := ""
		thumbsOK, thumbsBad := 0, []string{}
		outBytes[c.Target] = map[string]int{}
		for _, ck := range c.Checks {
			if isThumb(ck.Route) {
				if ck.OK {
					thumbsOK++
					outBytes[c.Target][ck.Route] = ck.Bytes
				} else {
					thumbsBad = append(thumbsBad, ck.Route)
				}
			} else if _, seen := okBy[ck.Route]; !seen {
				okBy[ck.Route] = "✓"
			}
			if !ck.OK {
				if !isThumb(ck.Route) {
					okBy[ck.Route] = "✗ **differs**"
				}
				failures = append(failures, fmt.Sprintf("%s, `%s`: %s", c.Target, ck.Name, ck.Detail))
			}
			if ck.Route == "json" {
				digest = ck.Digest
			}
		}
		cells := make([]string, len(basic))
		for i, rt := range basic {
			cells[i] = orDash(okBy[rt])
		}
		th := "-"
		switch {
		case len(thumbsBad) > 0:
			th = "✗ **" + strings.Join(thumbsBad, ", ") + "**"
		case thumbsOK > 0:
			th = fmt.Sprintf("✓ (%d)", thumbsOK)
		}
		w("| %s | %s | %s | %s |\n", c.Target, strings.Join(cells, " | "), th, orDash(digest))
	}
	w("\n")
	for _, f := range failures {
		w("- %s\n", f)
	}
	if len(failures) > 0 {
		w("\n")
	}
	if len(thumbs) == 0 {
		return
	}
	w("Thumbnail bytes per route (256x256 cover; JPEG and WebP at quality 80, AVIF at 58; an animated route: every frame), as each target answered the contract check:\n\n| target | %s |\n|---|%s\n", strings.Join(routeNames(thumbs), " | "), strings.Repeat("---|", len(thumbs)))
	for _, c := range r.Contract {
		if c.Error != "" {
			continue
		}
		cells := make([]string, len(thumbs))
		for i, rt := range thumbs {
			cells[i] = "-"
			if n := outBytes[c.Target][rt.ID]; n > 0 {
				cells[i] = fmt.Sprint(n)
			}
		}
		w("| %s | %s |\n", c.Target, strings.Join(cells, " | "))
	}
	w("\n")
}

// routeNames are short column names: "small png", "photo12 webp"; a route
// of an older results document, without source and format, by its ID.
func routeNames(rts []results.Route) []string {
	names := make([]string, len(rts))
	for i, rt := range rts {
		names[i] = rt.ID
		switch {
		case rt.Info && rt.HeaderOnly:
			names[i] = rt.Source + " info header"
		case rt.Info:
			names[i] = rt.Source + " info"
		case rt.Source != "":
			names[i] = rt.Source + " " + rt.Format
		}
	}
	return names
}

func startupFor(r *results.Results, name string) *results.Startup {
	for i := range r.Startup {
		if r.Startup[i].Target == name {
			return &r.Startup[i]
		}
	}
	return nil
}

func startupSection(w writer, r *results.Results) {
	if len(r.Startup) == 0 {
		return
	}
	base := startupFor(r, r.Baseline)
	table := func(title, what string, pick func(*results.Startup) stats.Summary) {
		w("## %s\n\n%s\n\n| target | runs | mean | median | median 95%% CI | min | max | stdev | median vs %s |\n|---|---|---|---|---|---|---|---|---|\n", title, what, r.Baseline)
		for i := range r.Startup {
			s := &r.Startup[i]
			x := pick(s)
			rt := "-"
			if base != nil {
				rt = ratio(stats.Ratio(pick(base).Median, x.Median), "faster", "slower")
			}
			if s.Target == r.Baseline {
				rt = "baseline"
			}
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", s.Target, x.N, ms(x.Mean), ms(x.Median), ci(x.MedianLo, x.MedianHi), ms(x.Min), ms(x.Max), ms(x.Stdev), rt)
		}
		w("\n")
	}
	table("Startup to health (ms)", "From just before the spawn (exec, or `docker run`) to the first 200 of `GET /health`. "+ciNote,
		func(s *results.Startup) stats.Summary { return s.Health })
	table("Startup to first thumbnail (ms)", "From just before the spawn to the 200 of a `POST /thumbnail` (the small JPEG, 256x256 cover PNG) sent as soon as /health answered: what a scale-to-zero user's first request feels.",
		func(s *results.Startup) stats.Summary { return s.Thumbnail })
	for _, s := range r.Startup {
		if s.PollGapUs > 0 {
			w("- %s: mean time between health poll attempts %.0f µs", s.Target, s.PollGapUs)
			if len(s.Errors) > 0 {
				w("; %d failed runs: %s", len(s.Errors), strings.Join(s.Errors, "; "))
			}
			w("\n")
		} else if len(s.Errors) > 0 {
			w("- %s: %d failed runs: %s\n", s.Target, len(s.Errors), strings.Join(s.Errors, "; "))
		}
	}
	w("\n")
}

func idleSection(w writer, r *results.Results) {
	if len(r.Idle) == 0 {
		return
	}
	var base *results.Idle
	for i := range r.Idle {
		if r.Idle[i].Target == r.Baseline {
			base = &r.Idle[i]
		}
	}
	w("## Idle memory (MB)\n\n")
	w("In cells mode VmRSS is the supervisor's; its cells' VmRSS, summed, is in the next column. ")
	w("RssFile counts the pages of the binary mapped, which the kernel may map by whole large folios beyond those touched; RssAnon is the process's own memory. ")
	w("PSS is the target's and its cells' proportional set size, summed: what they hold together, the binary's pages that every cell maps again counted once (the VmRSS figures count them in each process).\n\n")
	w("| target | VmRSS | VmSize | RssAnon | RssFile | threads | VmRSS vs %s | cells' VmRSS | PSS with cells |\n|---|---|---|---|---|---|---|---|---|\n", r.Baseline)
	for _, m := range r.Idle {
		if m.Error != "" {
			w("| %s | - | - | - | - | - | %s | - | - |\n", m.Target, m.Error)
			continue
		}
		cells, pss := "-", "-"
		if m.CellsRSS > 0 {
			cells = mb(m.CellsRSS)
		}
		if m.TreePss > 0 {
			pss = mb(m.TreePss)
		}
		rt := "-"
		if base != nil && base.Error == "" {
			rt = ratio(stats.Ratio(float64(base.VmRSS), float64(m.VmRSS)), "smaller", "larger")
		}
		if m.Target == r.Baseline {
			rt = "baseline"
		}
		w("| %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", m.Target, mb(m.VmRSS), mb(m.VmSize), mb(m.RssAnon), mb(m.RssFile), m.Threads, rt, cells, pss)
	}
	w("\n")
}

// cellsSection is the cell overhead study's table for thumbd's cells.
func cellsSection(w writer, r *results.Results) {
	if r.Cells == nil {
		return
	}
	w("## Cells: the overhead study's arms\n\n")
	w("The study (`cell-overhead.txt`) measured 25-35 ms per fresh worker, from copy-on-write faults on its first call, and a warm worker as fast as a process. ")
	w("Here: the same thumbnail in process, in a `thumbd cell` reused for every job, in a fresh cell per job (started ahead: only its first call is timed), the same pre-warmed with a synthetic thumbnail, and in a cell in a hardened container.\n\n")
	var b strings.Builder
	cellarms.Markdown(&b, *r.Cells)
	w("%s\n", b.String())
}

// cellsTargets pairs each cells-mode target with the in-process target
// that runs the same command or image.
func cellsTargets(r *results.Results) map[string]string {
	pairs := map[string]string{}
	for _, t := range r.Targets {
		if !slices.Contains(t.Env, "THUMBD_ENGINE=cells") {
			continue
		}
		for _, u := range r.Targets {
			if u.Name != t.Name && len(u.Env) == 0 && u.Kind == t.Kind && u.Image == t.Image && slices.Equal(u.Command, t.Command) {
				pairs[t.Name] = u.Name
			}
		}
	}
	return pairs
}

// cellGoalsSection holds cells mode to issue 12's goals.
func cellGoalsSection(w writer, r *results.Results) {
	var lines []string
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	if r.Cells != nil {
		for _, row := range r.Cells.Rows {
			if row.Arm == cellarms.Reused && row.Source == "small" {
				lines = append(lines, fmt.Sprintf("| %s | reused cell: median overhead ≤ 0.5 ms over in process, small source, one job at a time | %+.2f ms | %s |", r.Cells.Flavour, row.OverheadMs, mark(row.OverheadMs <= 0.5)))
			}
			if row.Arm == cellarms.Fresh && row.Source == "small" {
				lines = append(lines, fmt.Sprintf("| %s | fresh cell: measured, next to the study's 25-35 ms | %+.2f ms | |", r.Cells.Flavour, row.OverheadMs))
			}
		}
	}
	pairs := cellsTargets(r)
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, m := range r.Idle {
			if m.Target == name && m.Error == "" && strings.Contains(name, "static") {
				lines = append(lines, fmt.Sprintf("| %s | supervisor idle VmRSS ≤ 8 MB (static build) | %s MB (RssAnon %s MB) | %s |", name, mb(m.VmRSS), mb(m.RssAnon), mark(m.VmRSS <= 8e6)))
			}
		}
		if s := startupFor(r, name); s != nil && s.Thumbnail.N > 0 && strings.Contains(name, "static") {
			lines = append(lines, fmt.Sprintf("| %s | startup to the first thumbnail ≤ 25 ms (static build) | %s ms | %s |", name, ms(s.Thumbnail.Median), mark(s.Thumbnail.Median <= 25)))
		}
		for _, st := range r.Load {
			if st.Target != name || st.Route != "thumb-small" || st.Concurrency != 10 || st.Skipped != "" {
				continue
			}
			for _, base := range r.Load {
				if base.Target == pairs[name] && base.Route == st.Route && base.Concurrency == 10 && base.Skipped == "" && base.RPS > 0 {
					x := st.RPS / base.RPS
					lines = append(lines, fmt.Sprintf("| %s | thumb-small rps at 10 clients ≥ 95%% of %s's | %.1f%% | %s |", name, pairs[name], 100*x, mark(x >= 0.95)))
					lines = append(lines, fmt.Sprintf("| %s | default by measurement: cells if their p50 at 10 clients is within 5%% of %s's on thumb-small | %s vs %s ms (%+.1f%%) | %s |",
						name, pairs[name], ms(st.P50), ms(base.P50), 100*(st.P50/base.P50-1), mark(st.P50 <= 1.05*base.P50)))
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	w("## Issue 12's goals for cells, as measured here (not asserted)\n\n| target | goal | measured | |\n|---|---|---|---|\n%s\n\n", strings.Join(lines, "\n"))
}

func loadSection(w writer, r *results.Results) {
	if len(r.Load) == 0 {
		return
	}
	w("## Throughput and latency\n\n")
	w("rps counts 2xx answers only, over the step's whole wall time (the drain of in-flight requests included); latencies are over 2xx answers. With several rounds, a row gives the round with the median rps (the slower one of two; its latencies and CPU), the rps range over the rounds in brackets, the errors of every round and the largest peak RSS. Errors are non-2xx answers by status and transport errors. Client CPU is the driver's own CPU time (getrusage) per second of the step: 100%% is one core. Server CPU comes from /proc/PID/stat, server peak RSS from /proc/PID/status sampled every 20 ms, the server's and its child processes' summed (a cells-mode thumbd's cells; a fresh server per route). bytes/answer is the mean Content-Length of the answers, given only for steps without non-2xx answers (for /thumbnail: the image's size, to read next to its speed; the contract check gives every target's sizes). Each step is also bounded in count (50,000 requests per second of step).\n\n")
	w("**CPU µs/answer** is the server's CPU time (utime+stime of /proc/PID/stat, every thread, with its child processes': a cells-mode thumbd's cells) over the whole step, drain included, per 2xx answer, and *vs %s* its ratio to the baseline's (below 1: cheaper per request). Where the load generator saturates its core before the server does (on 2 cores, /health and /json), rps says little and this is the figure to compare. p50 is followed by its 95%% confidence interval in brackets. %s\n\n", r.Baseline, ciNote)
	baseRPS, baseCPU := map[string]float64{}, map[string]float64{}
	for _, s := range r.Load {
		if s.Target == r.Baseline && s.Skipped == "" {
			baseRPS[fmt.Sprintf("%s/%d", s.Route, s.Concurrency)] = s.RPS
			baseCPU[fmt.Sprintf("%s/%d", s.Route, s.Concurrency)] = s.CPUPerOK
		}
	}
	var idleMax, stealMax, otherMax float64
	for _, s := range r.Load {
		if s.Skipped == "" && s.ServerPeakRSS > 0 {
			idleMax, stealMax = math.Max(idleMax, s.HostIdle), math.Max(stealMax, s.HostSteal)
			otherMax = math.Max(otherMax, otherCPU(s, r.Machine.Cores))
		}
	}
	shared, timed := 0, 0
	for _, s := range r.Load {
		if s.Skipped == "" && s.ServerPeakRSS > 0 {
			timed++
			if otherCPU(s, r.Machine.Cores) > 0.25 {
				shared++
			}
		}
	}
	if shared > 0 {
		w("> **Warning: this run shared the machine.** In %d of %d steps, other processes took more than a quarter of a core (see the other CPU column): rps in those steps are lower than this machine gives, and differences between targets smaller than the spread between rounds, or between targets that run the same binary, are noise.\n\n", shared, timed)
	}
	var irqMax float64
	for _, s := range r.Load {
		irqMax = math.Max(irqMax, s.HostIRQ)
	}
	irq := fmt.Sprintf("up to %.0f%% of the machine here", 100*irqMax)
	if irqMax == 0 {
		irq = "not recorded by this run's driver, so counted as other here"
	}
	w("The other CPU column is the machine's busy CPU time minus interrupts and softirqs (where loopback traffic is processed, charged to no process: %s) and minus the driver's and the server's time: other processes; a large figure means the step shared the machine. ", irq)
	w("Machine-wide during the timed windows (/proc/stat): idle CPU up to %.0f%% of the machine, CPU stolen by the hypervisor up to %.1f%%, other processes up to %.0f%% of one core. A step where both processes stay far from 100%% CPU while the machine idles is bound by latency (wake-ups, loopback), not by either CPU.\n\n", 100*idleMax, 100*stealMax, 100*otherMax)
	for _, rt := range r.Routes {
		if !slices.ContainsFunc(r.Load, func(s results.LoadStep) bool { return s.Route == rt.ID }) {
			w("### %s\n\nNo step of this route ran.\n\n", rt.Label)
			continue
		}
		w("### %s\n\n| target | clients | rps | rps vs %s | CPU µs/answer | vs %s | p50 [95%% CI] | p90 | p99 | errors | client CPU | server CPU | other CPU | server peak RSS MB | bytes/answer |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", rt.Label, r.Baseline, r.Baseline)
		for _, s := range r.Load {
			if s.Route != rt.ID {
				continue
			}
			if s.Skipped != "" {
				w("| %s | %d | - | - | - | - | - | - | - | %s | - | - | - | - | - |\n", s.Target, s.Concurrency, s.Skipped)
				continue
			}
			vs := "-"
			if x := stats.Ratio(s.RPS, baseRPS[fmt.Sprintf("%s/%d", s.Route, s.Concurrency)]); x > 0 {
				vs = fmt.Sprintf("%.2f×", x)
			}
			if s.Target == r.Baseline {
				vs = "baseline"
			}
			srvCPU, other := "-", "-" // an already-running URL: no process to read
			if s.ServerPeakRSS > 0 {
				srvCPU = fmt.Sprintf("%.0f%%", 100*s.ServerCPU)
				other = fmt.Sprintf("%.0f%%", 100*otherCPU(s, r.Machine.Cores))
			}
			bytes := "-" // hey sums sizes over every answer: a mean with non-2xx mixed in means nothing
			if len(s.Non2xx) == 0 {
				bytes = fmt.Sprint(s.BytesPerOK)
			}
			cpu, cpuVs := "-", "-"
			if s.CPUPerOK > 0 {
				cpu = fmt.Sprintf("%.0f", s.CPUPerOK)
				if x := stats.Ratio(s.CPUPerOK, baseCPU[fmt.Sprintf("%s/%d", s.Route, s.Concurrency)]); x > 0 {
					cpuVs = fmt.Sprintf("%.2f×", x)
				}
			}
			if s.Target == r.Baseline && cpu != "-" {
				cpuVs = "baseline"
			}
			p50 := ms(s.P50)
			if c := ci(s.P50Lo, s.P50Hi); c != "-" {
				p50 += " [" + c + "]"
			}
			w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.0f%% | %s | %s | %s | %s |\n", s.Target, s.Concurrency, rpsCell(s), vs, cpu, cpuVs,
				p50, ms(s.P90), ms(s.P99), errorsCell(s), 100*s.ClientCPU, srvCPU, other, mb(s.ServerPeakRSS), bytes)
		}
		w("\n")
	}
}

// rpsCell is the step's rps, with the range over rounds when there were several.
func rpsCell(s results.LoadStep) string {
	if len(s.RoundsRPS) < 2 {
		return fmt.Sprintf("%.0f", s.RPS)
	}
	lo, hi := slices.Min(s.RoundsRPS), slices.Max(s.RoundsRPS)
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.RPS, lo, hi)
}

// otherCPU is the machine's busy CPU time during the step, in cores, less
// interrupts (the loopback traffic's own softirqs) and the driver's and the
// server's time: other processes; 0 when the step has no host figures.
func otherCPU(s results.LoadStep, cores int) float64 {
	if s.HostIdle == 0 && s.HostSteal == 0 {
		return 0
	}
	busy := (1 - s.HostIdle - s.HostSteal - s.HostIRQ) * float64(cores)
	return math.Max(0, busy-s.ClientCPU-s.ServerCPU)
}

func errorsCell(s results.LoadStep) string {
	failed := ""
	if s.FailedRounds > 0 {
		failed = fmt.Sprintf("; %d round(s) failed", s.FailedRounds)
	}
	if s.ErrorCount == 0 {
		return "0" + failed
	}
	var parts []string
	for _, code := range sortedKeys(s.Non2xx) {
		parts = append(parts, fmt.Sprintf("%d×%s", s.Non2xx[code], code))
	}
	for _, msg := range sortedKeys(s.Errors) {
		m := msg
		if len(m) > 40 {
			m = m[len(m)-40:]
		}
		parts = append(parts, fmt.Sprintf("%d× `%s`", s.Errors[msg], strings.ReplaceAll(m, "|", "/")))
	}
	return fmt.Sprintf("%d (%s)%s", s.ErrorCount, strings.Join(parts, ", "), failed)
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func imageSection(w writer, r *results.Results) {
	hasContainer := false
	for _, t := range r.Targets {
		if t.Kind == target.Container {
			hasContainer = true
		}
	}
	if !hasContainer {
		return
	}
	w("## Image size (MB)\n\n")
	if len(r.Images) == 0 {
		w("No container target could be measured (see Targets).\n\n")
		return
	}
	w("| target | image | `docker image inspect` size | `docker save` gzip'ed |\n|---|---|---|---|\n")
	for _, im := range r.Images {
		if im.Error != "" {
			w("| %s | %s | - | %s |\n", im.Target, im.Image, im.Error)
			continue
		}
		w("| %s | %s | %s | %s |\n", im.Target, im.Image, mb(im.Bytes), mb(im.GzipBytes))
	}
	w("\n")
}

// goalsSection checks the goals for every thumbd target against
// the Node twin: figures, not assertions.
func goalsSection(w writer, r *results.Results) {
	node := startupFor(r, "node")
	if node == nil {
		return
	}
	var lines []string
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	idle := map[string]int64{}
	for _, m := range r.Idle {
		if m.Error == "" {
			idle[m.Target] = m.VmRSS
		}
	}
	rps, cpu := map[string]float64{}, map[string]float64{}
	for _, s := range r.Load {
		if s.Skipped == "" {
			rps[fmt.Sprintf("%s/%s/%d", s.Target, s.Route, s.Concurrency)] = s.RPS
			cpu[fmt.Sprintf("%s/%s/%d", s.Target, s.Route, s.Concurrency)] = s.CPUPerOK
		}
	}
	type goal struct {
		route string
		min   float64
		conc  []int
	}
	goals := []goal{{"health", 3, []int{500}}, {"compute", 1.5, r.Options.Concurrency}}
	for _, rt := range r.Routes {
		if isThumb(rt.ID) { // issue 11: every source and format
			goals = append(goals, goal{rt.ID, 1, r.Options.Concurrency})
		}
	}
	for _, s := range r.Startup {
		if !strings.HasPrefix(s.Target, "thumbd") || s.Health.N == 0 {
			continue
		}
		sp := stats.Ratio(node.Health.Median, s.Health.Median)
		lines = append(lines, fmt.Sprintf("| %s | startup to health median ≤ 10 ms and ≥ 15× faster than node | %s ms, %.1f× | %s |",
			s.Target, ms(s.Health.Median), sp, mark(s.Health.Median <= 10 && sp >= 15)))
		if idle[s.Target] > 0 && idle["node"] > 0 {
			x := stats.Ratio(float64(idle["node"]), float64(idle[s.Target]))
			lines = append(lines, fmt.Sprintf("| %s | idle VmRSS ≤ 1/5 of node's | %s MB vs %s MB (%.1f×) | %s |", s.Target, mb(idle[s.Target]), mb(idle["node"]), x, mark(x >= 5)))
		}
		for _, g := range goals {
			var parts []string
			ok, any := true, false
			for _, c := range g.conc {
				a, b := rps[fmt.Sprintf("%s/%s/%d", s.Target, g.route, c)], rps[fmt.Sprintf("node/%s/%d", g.route, c)]
				x := stats.Ratio(a, b)
				if x == 0 {
					continue
				}
				any = true
				ok = ok && x >= g.min
				parts = append(parts, fmt.Sprintf("%.2f× at %d", x, c))
			}
			if any {
				lines = append(lines, fmt.Sprintf("| %s | %s rps ≥ %.1f× node's (clients: %s) | %s | %s |", s.Target, g.route, g.min, joinInts(g.conc), strings.Join(parts, ", "), mark(ok)))
			}
		}
		for _, route := range []string{"health", "json"} { // issue 11: where hey, not the server, limits rps
			var parts []string
			ok, any := true, false
			for _, c := range r.Options.Concurrency {
				x := stats.Ratio(cpu[fmt.Sprintf("%s/%s/%d", s.Target, route, c)], cpu[fmt.Sprintf("node/%s/%d", route, c)])
				if x == 0 {
					continue
				}
				any = true
				ok = ok && x <= 1
				parts = append(parts, fmt.Sprintf("%.2f× at %d", x, c))
			}
			if any {
				lines = append(lines, fmt.Sprintf("| %s | %s server CPU per answer ≤ node's | %s | %s |", s.Target, route, strings.Join(parts, ", "), mark(ok)))
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	w("## The issue's goals, as measured here (not asserted)\n\n| target | goal | measured | |\n|---|---|---|---|\n%s\n\n", strings.Join(lines, "\n"))
}
