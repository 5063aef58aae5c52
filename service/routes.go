package main

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// addRoutes lists every route of the API: the whole surface on one screen.
// The OpenAPI document (openapi.json) is tested against this list.
func addRoutes(r chi.Router, d deps) {
	h := d.respond.handle
	r.Get("/health", h(handleHealth).ServeHTTP)
	r.Get("/ready", h(handleReady(d.life)).ServeHTTP)
	if d.cfg.BenchRoutes { // the benchmark contract; off: unknown paths
		r.Get("/json", h(handleJSON()).ServeHTTP)
		r.Get("/compute", h(handleCompute).ServeHTTP)
		r.Get("/hash", h(handleHashGet).ServeHTTP)
		r.Post("/hash", h(uploadsOnly(d.cfg, handleHashPost(d.cfg.MaxBodyBytes))).ServeHTTP)
	}
	r.Post("/thumbnail", h(rejections(uploadsOnly(d.cfg, d.thumbs.handlePost()))).ServeHTTP)
	r.Get("/thumbnail", h(rejections(d.thumbs.handleGet())).ServeHTTP)
	r.Post("/info", h(rejections(uploadsOnly(d.cfg, d.thumbs.handleInfoPost()))).ServeHTTP)
	r.Get("/info", h(rejections(d.thumbs.handleInfoGet())).ServeHTTP)
	r.Get("/metrics", metricsHandler(d.registry).ServeHTTP)
	r.NotFound(h(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.NotFound, "No route %s.", r.URL.Path)
	}).ServeHTTP)
	r.MethodNotAllowed(h(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.MethodNotAllowed, "Method %s is not allowed on %s.", r.Method, r.URL.Path)
	}).ServeHTTP)
}

// uploadsOnly serves next unless uploads are off (THUMBD_UPLOADS=false):
// the one place the switch is applied, to both POST routes.
func uploadsOnly(cfg config, next handlerFunc) handlerFunc {
	if cfg.Uploads {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) error { return uploadsDisabled(r) }
}
