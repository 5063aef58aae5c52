// Package results defines the bench's versioned results document: what the
// driver writes as JSON and what the report and the charts read.
package results

import (
	"encoding/json"
	"os"
	"time"

	"github.com/thumbd/thumbd/bench/internal/contract"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/machine"
	"github.com/thumbd/thumbd/bench/internal/procmem"
	"github.com/thumbd/thumbd/bench/internal/stats"
	"github.com/thumbd/thumbd/bench/internal/target"
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
	Notes    []string     `json:"notes,omitempty"`
}

// Options are the settings the run used.
type Options struct {
	Quick         bool    `json:"quick"`
	StartupRuns   int     `json:"startup_runs"`
	PollInterval  float64 `json:"poll_interval_ms"`
	SettleSeconds float64 `json:"settle_s"`
	StepSeconds   float64 `json:"step_s"`
	WarmupSeconds float64 `json:"warmup_s"`
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
	procmem.Status
	Error string `json:"error,omitempty"`
}

// LoadStep is one (route, concurrency, target) step.
type LoadStep struct {
	Route       string `json:"route"`
	Target      string `json:"target"`
	Concurrency int    `json:"concurrency"`
	load.Outcome
	Skipped string `json:"skipped,omitempty"`
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
