package validate

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// What the memory of a cells-mode pod is made of, measured on the static
// build (the scratch image's binary; MALLOC_ARENA_MAX=2 as in the images)
// with 2 cells and 1 spare on the 2-core build machine, 2026-11-30: each
// process's VmRSS at rest, and each cell's VmHWM after one job on a fresh
// cell and after jobs on warm ones. k8s/overlays/cells/memory.yaml carries
// the same figures next to its arithmetic.
const (
	// supervisorMemory is the HTTP process: 15-16 MiB at rest, 36 MiB at
	// most while two 40 MP jobs ran (sources and encoded results pass
	// through it); rounded up.
	supervisorMemory int64 = 40 << 20
	// supervisorIdle and cellIdle are what the pod holds at rest: the
	// supervisor 15.2-16.2 MiB, a cell 16-19 MiB (libvips started).
	supervisorIdle int64 = 16 << 20
	cellIdle       int64 = 19 << 20
	// cellJobPeak is the most one job took a cell to at the limits below:
	// a 4096-pixel WebP from a 40 MP RGBA PNG, 429 MiB on a fresh cell and
	// 466 MiB on a warm one (libwebp's buffers; the same job in process
	// peaks at 434 MiB). Every other job measured stayed under 180 MiB.
	// THUMBD_CELL_MAX_RSS is read after a job, so it bounds what a cell
	// keeps between jobs, never this.
	cellJobPeak int64 = 470 << 20
)

// jobPeakLimits are the engine limits cellJobPeak was measured at: a
// deployment that raises one may make jobs larger than that.
func jobPeakLimits() []struct {
	name  string
	value int64
} {
	return []struct {
		name  string
		value int64
	}{
		{"THUMBD_MAX_BODY_BYTES", 20 << 20},
		{"THUMBD_MAX_PIXELS", 40_000_000},
		{"THUMBD_MAX_SIDE", 4096},
		{"THUMBD_MAX_ANIMATION_PIXELS", 16 << 20},
		{"THUMBD_MAX_FRAMES", 256},
	}
}

// cellsMemory is the most memory a cells-mode pod may hold, in its parts.
type cellsMemory struct {
	cells, spares int   // THUMBD_CONCURRENCY, THUMBD_CELL_SPARES
	bodies        int   // requests whose source may be in memory at once
	maxBody       int64 // THUMBD_MAX_BODY_BYTES
	maxRSS        int64 // THUMBD_CELL_MAX_RSS
}

// busyCell is what a cell running a job may hold: the largest job, or
// what it kept from earlier jobs if that is more.
func (m cellsMemory) busyCell() int64 { return max(cellJobPeak, m.maxRSS) }

// limit is the memory limit the pod needs so that no job at the limits
// meets the OOM killer: the supervisor, the sources admitted, as many cells
// busy with the largest job as there are slots, and the others (as many as
// the spares) idle, holding what an idle cell may keep (one over
// THUMBD_CELL_MAX_RSS after a job is replaced).
func (m cellsMemory) limit() int64 {
	return supervisorMemory + int64(m.bodies)*m.maxBody + int64(m.cells)*m.busyCell() + int64(m.spares)*m.maxRSS
}

func (m cellsMemory) String() string {
	return fmt.Sprintf("supervisor %s + bodies %d x %s + busy cells %d x max(job peak %s, THUMBD_CELL_MAX_RSS %s) + spares %d x %s = %s",
		mib(supervisorMemory), m.bodies, mib(m.maxBody), m.cells, mib(cellJobPeak), mib(m.maxRSS), m.spares, mib(m.maxRSS), mib(m.limit()))
}

// atRest is what the pod holds with no job: the scheduler must reserve
// at least this much (the memory request).
func (m cellsMemory) atRest() int64 {
	return supervisorIdle + int64(m.cells+m.spares)*cellIdle
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

// checkCellsMemory requires, in cells mode, a memory limit that holds the
// cells, the supervisor and the admitted sources at once, and a request
// that holds the pod at rest. inPod caps the requests in the container at
// once (Knative's containerConcurrency; 0 for none): only those can have a
// source in memory.
func checkCellsMemory(c *corev1.Container, env map[string]string, settings Settings, inPod int, p *problems) {
	if setting(env, settings, "THUMBD_ENGINE") != "cells" {
		return
	}
	m, ok := readCellsMemory(env, settings, inPod, p)
	if !ok {
		return
	}
	if lim, set := c.Resources.Limits[corev1.ResourceMemory]; set && lim.Value() < m.limit() {
		p.addf("container %s: cells mode: memory limit %s is below what the pod may hold: %s", c.Name, lim.String(), m)
	}
	if req, set := c.Resources.Requests[corev1.ResourceMemory]; set && req.Value() < m.atRest() {
		p.addf("container %s: cells mode: memory request %s is below what the pod holds at rest: supervisor %s + cells %d x %s = %s",
			c.Name, req.String(), mib(supervisorIdle), m.cells+m.spares, mib(cellIdle), mib(m.atRest()))
	}
}

// readCellsMemory reads the settings the sizing depends on.
func readCellsMemory(env map[string]string, settings Settings, inPod int, p *problems) (cellsMemory, bool) {
	// THUMBD_CONCURRENCY's default follows the CPUs the process sees,
	// which the manifests cannot know: the sizing needs it written.
	if _, set := env["THUMBD_CONCURRENCY"]; !set {
		p.addf("cells mode: THUMBD_CONCURRENCY must be set: the memory limit is sized for that many cells")
		return cellsMemory{}, false
	}
	before := len(*p)
	num := func(name string) int64 {
		v := setting(env, settings, name)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			p.addf("cells mode: %s %q is not a number the memory sizing can use", name, v)
		}
		return n
	}
	m := cellsMemory{
		cells:   int(num("THUMBD_CONCURRENCY")),
		spares:  int(num("THUMBD_CELL_SPARES")),
		maxBody: num("THUMBD_MAX_BODY_BYTES"),
		maxRSS:  num("THUMBD_CELL_MAX_RSS"),
	}
	// Sources are read, wait and are processed within THUMBD_SOURCE_BUDGET
	// (0: 32 of the largest; README, "How the limits bound a request"): the
	// queue does not bound them, since a source is read before its request
	// takes a place.
	m.bodies = 32
	if budget := num("THUMBD_SOURCE_BUDGET"); budget > 0 && m.maxBody > 0 {
		m.bodies = int((budget + m.maxBody - 1) / m.maxBody)
	}
	if inPod > 0 {
		m.bodies = min(m.bodies, inPod)
	}
	for _, l := range jobPeakLimits() {
		if v := num(l.name); v > l.value {
			p.addf("cells mode: %s %d is above %d, the limit the per-job peak (%s) was measured at: measure the largest job again and update k8s/validate/sizing.go and the manifests' sizing",
				l.name, v, l.value, mib(cellJobPeak))
		}
	}
	return m, len(*p) == before
}
