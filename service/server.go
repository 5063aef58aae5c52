package main

import (
	"log/slog"
	"net/http"
	"os"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// deps is what the handlers need, built once in run.
type deps struct {
	cfg      config
	logger   *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics
	life     *lifecycle
	thumbs   *thumbnailer
}

// newDeps wires the service's parts. sources may be nil (GET /thumbnail off).
func newDeps(cfg config, logger *slog.Logger, engine *thumb.Engine, life *lifecycle, sources *os.Root) deps {
	reg := prometheus.NewRegistry()
	gate := admission.New(cfg.Concurrency, cfg.Queue)
	m := newMetrics(reg, gate, life)
	return deps{
		cfg: cfg, logger: logger, registry: reg, metrics: m, life: life,
		thumbs: &thumbnailer{cfg: cfg, engine: engine, gate: gate, life: life, sources: sources, metrics: m,
			bodies: admission.NewBytes(int64(cfg.Queue+cfg.Concurrency) * cfg.MaxBodyBytes)},
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
