package main

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// addRoutes lists every route of the API: the whole surface on one screen.
// The OpenAPI document (openapi.yaml) is tested against this list.
func addRoutes(r chi.Router, d deps) {
	r.Get("/health", handleHealth().ServeHTTP)
	r.Get("/ready", handleReady(d.life).ServeHTTP)
	r.Get("/json", handleJSON().ServeHTTP)
	r.Get("/compute", handleCompute().ServeHTTP)
	r.Get("/hash", handleHashGet().ServeHTTP)
	r.Post("/hash", handleHashPost(d.cfg.MaxBodyBytes).ServeHTTP)
	r.Post("/thumbnail", d.thumbs.handlePost().ServeHTTP)
	r.Get("/thumbnail", d.thumbs.handleGet().ServeHTTP)
	r.Get("/metrics", metricsHandler(d.registry).ServeHTTP)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, codeNotFound, "No route "+r.URL.Path+".")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, "Method "+r.Method+" is not allowed on "+r.URL.Path+".")
	})
}
