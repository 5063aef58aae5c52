// Package memplan shares out the memory limit: the result cache, the
// source and job budgets, the queue and the Go heap's soft limit, each
// derived from the limit unless the operator set it (docs/hardening.md,
// "Memory").
package memplan

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/memlimit"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// Plan is how the memory limit is shared out. Every part not set by
// the operator is derived from the limit, so that with no setting at all
// the process stays under it (docs/hardening.md, "Memory"):
//
//	limit = base + slack + cache + store queue + sources + outputs + cells' idle + jobs
//
// The result cache (THUMBD_CACHE_SIZE, off by default) is taken first, so
// the derived budgets shrink to make room for it; it may take at most half
// of what the process and the slack leave. The result store's write queue
// (THUMBD_RESULT_STORE_QUEUE, when THUMBD_RESULT_STORE is on) is taken next,
// at most a quarter of what is left.
//
// Go's heap holds the sources and the answers being written; libvips' C
// heap (in this process or in the cells) holds the jobs, each admitted
// with its estimated peak (memcost) against the jobs' budget.
type Plan struct {
	Limit   memlimit.Limit
	Sources int64 // THUMBD_SOURCE_BUDGET: bytes of sources held at once
	// SourcesHeld is how many files and bucket objects are held at once
	// (admission's WithHeld): one running and one read ahead a slot, and
	// one more (an answer that is a source's own bytes holds its source
	// while a client reads it).
	SourcesHeld int64
	Outputs     int64 // the Go heap's share for answers and requests in flight
	Cache       int64 // THUMBD_CACHE_SIZE: the result cache, in the Go heap
	// StoreQueue is THUMBD_RESULT_STORE_QUEUE when the result store is
	// on: thumbnails waiting to be written, in the Go heap.
	StoreQueue int64
	Cells      int64 // idle memory of the cells (cells mode)
	Jobs       int64 // THUMBD_MEMORY_BUDGET: libvips' memory for jobs in the works
	Queue      int   // THUMBD_QUEUE
	// Connections is THUMBD_MAX_CONNECTIONS: connections open at once on
	// the serving port.
	Connections int
	// GoLimit is the Go runtime's soft memory limit set at start; 0 when
	// GOMEMLIMIT was given (the runtime then applied it itself).
	GoLimit int64
	// Largest is the estimated peak of the costliest job the limits allow
	// (MaxPixels of RGBA PNG to a MaxSide square of AVIF): a Jobs budget
	// below it refuses such jobs with 422 needs_more_memory.
	Largest int64
}

// defaultBudgetBodies is THUMBD_SOURCE_BUDGET's default in largest sources.
// The queue was 32 deep and bounded the sources' memory by its depth until
// 2026-12-01, and the budget kept that bound (docs/hardening.md, "Memory")
// until the budget was seen to bound something else: the uploads of a
// burst read before any job can start. They are read together and none is
// done until most are, so the slots wait for all of them: at 32 (640 MiB,
// no memory limit), 500 clients posting the 12 MP photo had 178 uploads in
// at once, 2 thumbnails done in the first 3 s, and 23-24 thumbnails/s
// against about 30 at 10 clients; at 15 (300 MiB) 26-27/s, as at 8 and as
// a 1 GiB limit's 224 MiB (bench/results/2026-12-02-overload3/door4.md).
// At 5 (100 MiB) on a machine where page faults cost more: every upload is
// read into a fresh buffer, and with 300 MiB of them in flight thumbd took
// 113-126 thousand page faults in 6 s of the same load against 38-45
// thousand, for the same CPU: 18.0 thumbnails/s against 20.7-21.3, 20.3
// at 10 clients (bench/results/2026-12-02-coldstart2/faults-budget.txt);
// 60 MiB did no better. 5 sources keep both slots fed with the next ones
// read, and at a 3.7 MB photo 27 are in at once. Limits up to 470 MiB keep
// their quarter, which is less. More slots need more: budgetBodies.
const defaultBudgetBodies = 5

// budgetBodies is the default budget's cap in largest sources for
// concurrency slots: one source in each slot and one read ahead for each,
// and one more; at least defaultBudgetBodies (2 slots: 5).
func budgetBodies(concurrency int) int64 {
	return int64(max(defaultBudgetBodies, 2*concurrency+1))
}

// The model's fixed parts, measured (docs/hardening.md, "Memory").
const (
	// BaseMemory is the idle process: binary, libvips and its codecs, the
	// Go runtime (idle VmRSS 16-19 MB in both images).
	BaseMemory = 24 << 20
	// cellIdleMemory is one idle cell's resident memory beyond what it
	// shares with its siblings (PSS about 5 MB, VmRSS about 11 MB).
	cellIdleMemory = 12 << 20
	// GoRuntimeMemory is the Go runtime's own idle share of GOMEMLIMIT.
	GoRuntimeMemory = 8 << 20
	// queueBytesPerEntry sizes the default queue: a waiting request holds
	// its goroutine, connection buffers and request (about 20 KB measured)
	// beside its source, which the source budget bounds; 1 MiB of limit
	// per place keeps that bookkeeping to about 2 %.
	queueBytesPerEntry = 1 << 20
	// queuePerSlot bounds the default queue by the CPU as well: a slot
	// finishes about 128 12 MP photos within the 10 s deadline (70-80 ms
	// each under load), so a deeper queue holds work the deadline door
	// will refuse anyway, and the connections that feed it cost the
	// thumbnails CPU: at 500 clients with no limit, a queue of 1024 (cap
	// 1282) gave 0.74-0.89 of the 10-client rate and probe p99s of 41 ms,
	// a cap of 322 0.93-0.97 and 5-10 ms (bench/results/2026-12-03-cap).
	// Past the cap, connections wait unread for a place, which absorbs a
	// burst of small jobs for next to nothing (package connlimit).
	queuePerSlot = 128
)

// DefaultQueue is THUMBD_QUEUE's default: a place per MiB of the memory
// limit (queueBytesPerEntry) and at most queuePerSlot per slot, at least
// 8 and at most 1024: 256 with 2 slots from a 256 MiB limit up.
func DefaultQueue(concurrency int, limit int64) int {
	return int(min(max(min(limit/queueBytesPerEntry, int64(concurrency)*queuePerSlot), 8), 1024))
}

// DefaultConnections is THUMBD_MAX_CONNECTIONS's default: a connection for
// each slot and each place of the queue, and no more. A connection past
// them would find the queue full and get a 503 queue_full at once, and at
// 500 clients those come straight back, each with the start of an
// upload: a quarter of the queue more (322 against 258 with 2 slots) cost
// 5-12 % of the thumbnails (bench/results/2026-12-03-cap). Requests that
// take no place (cache hits, 304s, errors) share the same places;
// keep-alive connections between requests and new ones without a whole
// request head give theirs up after a second at the cap (connlimit), and
// probes past the cap are served in a reserve of their own. A connection
// costs about 20 KB of Go heap (goroutine, buffers, request;
// queueBytesPerEntry), so the cap follows the queue, which follows the
// limit and the slots: 258 connections (about 5 MiB) with 2 slots from
// 256 MiB up, 130 at 128 MiB, within the Go heap's share for requests in
// flight (Outputs, an eighth of what the process leaves).
// docs/hardening.md, "Connections".
func DefaultConnections(concurrency, queue int) int {
	return concurrency + queue
}

// errMemory is a setting that cannot fit the memory limit.
func errMemory(setting string, value int64, l memlimit.Limit, fits string) error {
	return fmt.Errorf("%s=%d does not fit the memory limit of %s (%s, %s): %s", setting, value, MiB(l.Bytes), l.Source, l.Path, fits)
}

// Settings are what the plan reads of the settings.
type Settings struct {
	CacheSize, SourceBudget, MemoryBudget int64 // as given: 0 for the budgets unless explicit
	StoreQueue                            int64 // THUMBD_RESULT_STORE_QUEUE when THUMBD_RESULT_STORE is on, else 0
	MaxBodyBytes, MaxPixels               int64
	MaxSide, Queue                        int
	MaxConnections                        int  // as given: 0 unless explicit
	Cells                                 bool // cells mode, with Concurrency + CellSpares cells
	Concurrency, CellSpares               int
}

// Derive shares out the limit. explicit tells which settings the
// operator gave (their values in c win); goMemLimit is GOMEMLIMIT's value.
func Derive(c Settings, l memlimit.Limit, explicit func(env string) bool, goMemLimit string) (Plan, error) {
	p := Plan{Limit: l}
	slack := l.Bytes / 10 // allocator fragmentation, the estimate's error
	avail := l.Bytes - BaseMemory - slack
	if p.Cache = c.CacheSize; p.Cache > max(avail/2, 0) {
		return p, errMemory("THUMBD_CACHE_SIZE", p.Cache, l, fmt.Sprintf("at most %d (half of what the process leaves) fits beside the budgets", max(avail/2, 0)))
	}
	avail -= p.Cache
	if c.StoreQueue > 0 {
		if p.StoreQueue = c.StoreQueue; p.StoreQueue > max(avail/4, 0) {
			return p, errMemory("THUMBD_RESULT_STORE_QUEUE", p.StoreQueue, l, fmt.Sprintf("at most %d (a quarter of what the process and the cache leave) fits beside the budgets", max(avail/4, 0)))
		}
		avail -= p.StoreQueue
	}
	p.Outputs = max(avail/8, 0)
	if c.Cells {
		p.Cells = int64(c.Concurrency+c.CellSpares) * cellIdleMemory
	}
	minJob := memcost.Estimate(memcost.Header{Format: imagefmt.PNG, Width: 1, Height: 1, Bands: 4, BytesPerSample: 1, Frames: 1},
		memcost.Job{Width: 1, Height: 1, Fit: thumbjob.FitCover, Output: imagefmt.PNG})
	if explicit("THUMBD_SOURCE_BUDGET") {
		p.Sources = c.SourceBudget
		if most := avail - p.Outputs - p.Cells - minJob; p.Sources > most {
			return p, errMemory("THUMBD_SOURCE_BUDGET", p.Sources, l, fmt.Sprintf("at most %d fits beside the process and one job", max(most, 0)))
		}
	} else {
		p.Sources = max(min(avail/4, budgetBodies(c.Concurrency)*c.MaxBodyBytes), c.MaxBodyBytes)
	}
	p.SourcesHeld = int64(2*max(c.Concurrency, 1) + 1)
	if explicit("THUMBD_MEMORY_BUDGET") {
		p.Jobs = c.MemoryBudget
		if most := avail - p.Outputs - p.Cells - p.Sources; p.Jobs > most {
			return p, errMemory("THUMBD_MEMORY_BUDGET", p.Jobs, l, fmt.Sprintf("at most %d fits beside the process and the %s source budget", max(most, 0), MiB(p.Sources)))
		}
	} else {
		p.Jobs = avail - p.Outputs - p.Cells - p.Sources
	}
	if p.Jobs < minJob {
		need := (BaseMemory + p.Cache + p.StoreQueue + p.Outputs + p.Cells + p.Sources + minJob) * 10 / 9
		return p, fmt.Errorf("the memory limit of %s (%s, %s) leaves %s for thumbnails, less than the smallest job's %s: give thumbd at least %s (THUMBD_MEMORY_LIMIT or the container's limit)",
			MiB(l.Bytes), l.Source, l.Path, MiB(max(p.Jobs, 0)), MiB(minJob), MiB(need))
	}
	p.Queue = c.Queue
	if !explicit("THUMBD_QUEUE") {
		p.Queue = DefaultQueue(c.Concurrency, l.Bytes)
	}
	p.Connections = c.MaxConnections
	if !explicit("THUMBD_MAX_CONNECTIONS") {
		p.Connections = DefaultConnections(c.Concurrency, p.Queue)
	}
	if goMemLimit == "" {
		p.GoLimit = GoRuntimeMemory + p.Sources + p.Outputs + p.Cache + p.StoreQueue + slack/2
	}
	p.Largest = memcost.Estimate(memcost.Header{Format: imagefmt.PNG, Width: int(c.MaxPixels), Height: 1, Bands: 4, Alpha: true, BytesPerSample: 1, Frames: 1},
		memcost.Job{Width: c.MaxSide, Height: c.MaxSide, Fit: thumbjob.FitFill, Output: imagefmt.AVIF, MaxSide: c.MaxSide, MaxPixels: c.MaxPixels})
	return p, nil
}

// SmallestLimit is the smallest limit, to 1 MiB, whose derived jobs'
// budget holds the largest job c allows (the budget grows with the limit:
// a binary search).
func SmallestLimit(c Settings) int64 {
	none := func(string) bool { return false }
	fits := func(l int64) bool {
		p, err := Derive(c, memlimit.Limit{Bytes: l}, none, "")
		return err == nil && p.Jobs >= p.Largest
	}
	lo, hi := int64(1), int64(1<<20) // in MiB: lo does not fit, hi does
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if fits(mid << 20) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi << 20
}

// Log says, once at start, the limit found and every value derived.
func (p Plan) Log(logger *slog.Logger, c Settings) {
	goLimit := "GOMEMLIMIT (set by the environment)"
	if p.GoLimit > 0 {
		goLimit = MiB(p.GoLimit)
	}
	logger.Info("memory", "limit", p.Limit.Bytes, "limit_from", p.Limit.Source+" "+p.Limit.Path,
		"jobs_budget", p.Jobs, "source_budget", p.Sources, "sources_held", p.SourcesHeld, "outputs", p.Outputs, "cache", p.Cache, "result_store_queue", p.StoreQueue, "cells_idle", p.Cells,
		"queue", p.Queue, "max_connections", p.Connections, "go_memory_limit", goLimit)
	if p.Largest > p.Jobs {
		logger.Warn(fmt.Sprintf("memory limit %s: the largest job the limits allow (a %s source to %s) needs about %s, more than the %s budget for jobs; such jobs answer 422 needs_more_memory. About %s would serve them",
			MiB(p.Limit.Bytes), "THUMBD_MAX_PIXELS RGBA PNG", "a THUMBD_MAX_SIDE square AVIF", MiB(p.Largest), MiB(p.Jobs), MiB(SmallestLimit(c))))
	}
}

// MiB writes n bytes in MiB, for people.
func MiB(n int64) string {
	s := fmt.Sprintf("%.1f", float64(n)/(1<<20))
	return strings.TrimSuffix(s, ".0") + " MiB"
}

// Register exports the plan and the budgets' use as gauges.
func Register(reg prometheus.Registerer, p Plan, gate *admission.Gate, sources *admission.Bytes) {
	budget := func(name string, size, used func() int64) []prometheus.Collector {
		labels := prometheus.Labels{"budget": name}
		return []prometheus.Collector{
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_memory_budget_bytes", ConstLabels: labels,
				Help: "Size of a memory budget derived from the memory limit: jobs (libvips, by estimated peak) or sources (bytes held)."},
				func() float64 { return float64(size()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_memory_budget_used_bytes", ConstLabels: labels,
				Help: "Bytes of a memory budget taken now."},
				func() float64 { return float64(used()) }),
		}
	}
	reg.MustRegister(budget("jobs", func() int64 { size, _ := gate.Memory(); return size }, func() int64 { _, used := gate.Memory(); return used })...)
	reg.MustRegister(budget("sources", sources.Max, sources.Used)...)
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_memory_limit_bytes",
			Help: "The memory limit the budgets are derived from (THUMBD_MEMORY_LIMIT, else the cgroup's, else MemTotal)."},
			func() float64 { return float64(p.Limit.Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_thumbnail_memory_waiting",
			Help: "Admitted thumbnails waiting for their estimated memory."},
			func() float64 { return float64(gate.MemoryWaiting()) }),
	)
}
