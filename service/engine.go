package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// engine runs the pipeline's jobs (its one call, Run, is the pipeline's
// engine seam): libvips in this process (inProcess), or in sandboxed
// worker processes (cellsEngine). Start once, Stop once no job runs any
// more.
type engine interface {
	pipeline.Engine
	Start() error
	Stop()
	// Memory is libvips' tracked allocations, current and peak; called
	// only once Start has returned.
	Memory() (current, peak int64)
	// Collector is the mode's own metrics, registered with the service's.
	Collector() prometheus.Collector
}

// inProcess is libvips in the HTTP process.
type inProcess struct{ *thumb.Engine }

func (e inProcess) Start() error {
	e.Engine.Start()
	return nil
}

func (inProcess) Memory() (current, peak int64) { return thumb.Memory() }

// Collector reports the cells' metrics with no pool: every sandbox layer
// off, so that the series exist in both modes.
func (inProcess) Collector() prometheus.Collector { return newCellMetrics(nil) }
