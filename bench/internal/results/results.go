// Package results defines the bench's versioned results document: what the
// driver writes as JSON and what the report and the charts read.
package results

import (
	"cmp"
	"encoding/json"
	"os"
	"slices"
	"time"

	"github.com/thumbd/thumbd/bench/internal/cellarms"
	"github.com/thumbd/thumbd/bench/internal/contract"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/machine"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/procfs"
)

// Schema names this document's version; bump it when a field changes meaning.
const Schema = "thumbd-bench/v1"

// Results is one bench run.
type Results struct {
	Schema   string       `json:"schema"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Command  string       `json:"command"`
	Machine  machine.Info `json:"machine"`
	Options  Options      `json:"options"`
	Baseline string       `json:"baseline"`
	Targets  []Target     `json:"targets"`
	Routes   []Route      `json:"routes"`
	Contract []Contract   `json:"contract"`
	Startup  []Startup    `json:"startup"`
	Idle     []Idle       `json:"idle_memory"`
	Load     []LoadStep   `json:"load"`
	Images   []Image      `json:"images"`
	// Cells is the cell overhead study's arms (bench cells), when run.
	Cells *cellarms.Table `json:"cells,omitempty"`
	Notes []string        `json:"notes,omitempty"`
}

// Options are the settings the run used.
type Options struct {
	Quick         bool    `json:"quick"`
	StartupRuns   int     `json:"startup_runs"`
	PollInterval  float64 `json:"poll_interval_ms"`
	SettleSeconds float64 `json:"settle_s"`
	StepSeconds   float64 `json:"step_s"`
	WarmupSeconds float64 `json:"warmup_s"`
	Rounds        int     `json:"rounds"`
	Concurrency   []int   `json:"concurrency"`
	Pinned        bool    `json:"pinned"`
	ServerCPUs    string  `json:"server_cpus,omitempty"`
	ClientCPUs    string  `json:"client_cpus,omitempty"`
	DockerNetwork string  `json:"docker_network"`
}

// Target is one thing measured; Skipped says why it was not (missing binary,
// no Docker, no image).
type Target struct {
	target.Spec
	Skipped string `json:"skipped,omitempty"`
	// Allowed is the CPU list the server was seen allowed on.
	Allowed string `json:"cpus_allowed,omitempty"`
	// Libvips is the libvips version the target reports (thumbd_build_info
	// in /metrics; sharp's for the Node twin).
	Libvips string `json:"libvips,omitempty"`
}

// Route is one load route.
type Route struct {
	ID        string `json:"id"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Label     string `json:"label"`
	BodyBytes int    `json:"body_bytes,omitempty"`
	// Source and Format name a thumbnail route's source (small, large,
	// photo12, animated) and output format (png, jpeg, webp, avif).
	Source string `json:"source,omitempty"`
	Format string `json:"format,omitempty"`
	// Animated: the route asks for every frame of its animated source
	// (animated=true).
	Animated bool `json:"animated,omitempty"`
	// Info: a POST /info route of Source (Format empty); HeaderOnly asks
	// thumbhash=false.
	Info       bool `json:"info,omitempty"`
	HeaderOnly bool `json:"header_only,omitempty"`
}

// Contract is one target's contract check.
type Contract struct {
	Target string           `json:"target"`
	Checks []contract.Check `json:"checks"`
	Error  string           `json:"error,omitempty"`
}

// Startup holds one target's startup runs, in milliseconds from just before
// the spawn.
type Startup struct {
	Target      string        `json:"target"`
	HealthMs    []float64     `json:"health_ms"`
	ThumbnailMs []float64     `json:"thumbnail_ms"`
	Health      stats.Summary `json:"health"`
	Thumbnail   stats.Summary `json:"thumbnail"`
	PollGapUs   float64       `json:"poll_gap_us"` // mean time between health attempts
	Errors      []string      `json:"errors,omitempty"`
}

// Idle is one target's memory after start and the settle period.
type Idle struct {
	Target string `json:"target"`
	procfs.Status
	// CellsRSS is the VmRSS of the target's child processes, summed: in
	// cells mode, its cells (VmRSS is the supervisor's alone).
	CellsRSS int64 `json:"cells_rss,omitempty"`
	// TreePss is the PSS of the target and its child processes, summed:
	// what they hold together, the pages they share counted once.
	TreePss int64  `json:"tree_pss,omitempty"`
	Error   string `json:"error,omitempty"`
}

// LoadStep is one (route, concurrency, target) step. With several rounds,
// its figures are those of the round with the median rps, except errors
// (summed over every round: none is hidden) and peak RSS (the largest).
type LoadStep struct {
	Route       string `json:"route"`
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	load.Outcome
	Skipped string `json:"skipped,omitempty"`
	// RoundsRPS holds every good round's rps, in the order run (with more
	// than one round); FailedRounds counts rounds that could not be used.
	RoundsRPS    []float64 `json:"rounds_rps,omitempty"`
	FailedRounds int       `json:"failed_rounds,omitempty"`
	Rounds       []Round   `json:"rounds,omitempty"`
}

// Round is one pass of a step.
type Round struct {
	load.Outcome
	Failed string `json:"failed,omitempty"`
}

// addCounts adds src's counts into dst, made when first needed (nil while
// there is nothing to count, as an omitempty map must be).
func addCounts(dst, src map[string]int) map[string]int {
	for k, v := range src {
		if dst == nil {
			dst = map[string]int{}
		}
		dst[k] += v
	}
	return dst
}

// Combine folds a step's rounds into one LoadStep (see LoadStep).
func Combine(route, target string, conc int, rounds []Round) LoadStep {
	st := LoadStep{Route: route, Target: target, Concurrency: conc}
	var ok []Round
	for _, r := range rounds {
		if r.Failed != "" {
			st.Skipped = r.Failed
			st.FailedRounds++
			continue
		}
		ok = append(ok, r)
		st.RoundsRPS = append(st.RoundsRPS, r.RPS)
	}
	if len(ok) == 0 {
		if st.Skipped == "" {
			st.Skipped = "no round ran"
		}
		return st
	}
	st.Skipped = ""
	// ok is this function's own slice (RoundsRPS keeps the order run).
	slices.SortStableFunc(ok, func(a, b Round) int { return cmp.Compare(a.RPS, b.RPS) })
	st.Outcome = ok[(len(ok)-1)/2].Outcome // the lower median for an even count
	st.Non2xx, st.Errors, st.ErrorCount = nil, nil, 0
	for _, r := range ok {
		st.ErrorCount += r.ErrorCount
		st.ServerPeakRSS = max(st.ServerPeakRSS, r.ServerPeakRSS)
		st.Non2xx = addCounts(st.Non2xx, r.Non2xx)
		st.Errors = addCounts(st.Errors, r.Errors)
	}
	if len(rounds) > 1 {
		st.Rounds = rounds
	} else {
		st.RoundsRPS = nil
	}
	return st
}

// Image is a container target's image size.
type Image struct {
	Target    string `json:"target"`
	Image     string `json:"image"`
	Bytes     int64  `json:"bytes"`
	GzipBytes int64  `json:"gzip_bytes"`
	Error     string `json:"error,omitempty"`
}

// Write saves r as indented JSON.
func Write(path string, r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Read loads a results document.
func Read(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
