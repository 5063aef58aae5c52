package main

import (
	"log/slog"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/source"
)

// deps is what the handlers need, built once in run.
type deps struct {
	cfg      config
	logger   *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics
	life     *lifecycle
	respond  *responder
	thumbs   *thumbnails
}

// newDeps wires the service's parts. sources may be nil (GET /thumbnail off).
func newDeps(cfg config, logger *slog.Logger, eng engine, life *lifecycle, sources *os.Root) deps {
	reg := prometheus.NewRegistry()
	gate := admission.New(cfg.Concurrency, cfg.Queue)
	m := newMetrics(reg, gate, life)
	rs := &responder{rejections: m.rejections}
	// Sources are held from the first byte read until the answer is
	// written: (queue + concurrency) x the size limit bounds them all.
	limits := source.Limits{MaxBytes: cfg.MaxBodyBytes, Budget: admission.NewBytes(int64(cfg.Queue+cfg.Concurrency) * cfg.MaxBodyBytes)}
	var dir *source.Dir
	if sources != nil {
		dir = &source.Dir{Limits: limits, Root: sources}
	}
	return deps{
		cfg: cfg, logger: logger, registry: reg, metrics: m, life: life, respond: rs,
		thumbs: &thumbnails{cfg: cfg, gate: gate, limits: limits, dir: dir, respond: rs,
			engine: &engineStage{engine: eng, life: life, metrics: m}},
	}
}

// newServer returns the service's handler: request IDs and logs, metrics,
// then the routes.
func newServer(d deps) http.Handler {
	r := chi.NewRouter()
	r.Use(withRequestLog(d.logger, newRequestIDs()), d.metrics.instrument)
	addRoutes(r, d)
	return r
}
