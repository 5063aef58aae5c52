package main

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/benchroutes"
	"github.com/thumbd/thumbd/service/internal/httpmetrics"
	"github.com/thumbd/thumbd/service/internal/imgproxy"
	"github.com/thumbd/thumbd/service/internal/imgproxyendpoint"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/pipeline"
)

// addRoutes lists every route of the API: the whole surface on one screen.
// The OpenAPI document (openapi.json) is tested against this list.
// /metrics is on the admin port instead when THUMBD_ADMIN_PORT is set.
func addRoutes(r chi.Router, d deps) {
	h := d.respond.Handle
	addProbes(r, d)
	if d.cfg.BenchRoutes { // the benchmark contract; off: unknown paths
		r.Get("/json", h(benchroutes.HandleJSON()).ServeHTTP)
		r.Get("/compute", h(benchroutes.HandleCompute).ServeHTTP)
		r.Get("/hash", h(benchroutes.HandleHashGet).ServeHTTP)
		r.Post("/hash", h(uploadsOnly(d.cfg, benchroutes.HandleHashPost(d.cfg.MaxBodyBytes))).ServeHTTP)
	}
	for _, rt := range params.Routes() { // GET and POST /thumbnail and /info
		handler := d.thumbs.Handler(rt)
		if rt.Upload() {
			handler = uploadsOnly(d.cfg, handler)
		}
		r.Method(rt.Method, rt.Path, h(pipeline.Rejections(handler)))
	}
	if !d.cfg.AdminPort.On {
		r.Get("/metrics", metricsHandler(d.registry).ServeHTTP)
	}
	if d.cfg.Imgproxy.On { // imgproxy's grammar: a catch-all below thumbd's fixed names
		ic, _ := d.cfg.imgproxyConfig() // checked by loadConfig
		r.Get(d.cfg.Imgproxy.Root(), httpmetrics.Labelled("imgproxy", h(pipeline.Rejections(imgproxyendpoint.Handler(ic, d.cfg.Imgproxy.Prefix, d.thumbs)))))
	}
	addUnrouted(r, d)
}

// addAdminRoutes lists the admin port's routes (THUMBD_ADMIN_PORT): the
// probes and the metrics. None waits on what the serving side holds:
// /health and /ready read an atomic, /metrics the collectors' counters
// under their short locks, never one held across a read or a job.
func addAdminRoutes(r chi.Router, d deps) {
	addProbes(r, d)
	r.Get("/metrics", metricsHandler(d.registry).ServeHTTP)
	addUnrouted(r, d)
}

// addProbes adds /health and /ready, served on both ports.
func addProbes(r chi.Router, d deps) {
	h := d.respond.Handle
	r.Get("/health", h(lifecycle.HandleHealth).ServeHTTP)
	r.Get("/ready", h(lifecycle.HandleReady(d.life)).ServeHTTP)
}

// addUnrouted answers unknown paths and methods with the API's errors.
func addUnrouted(r chi.Router, d deps) {
	h := d.respond.Handle
	r.NotFound(h(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.NotFound, "No route %s.", r.URL.Path)
	}).ServeHTTP)
	r.MethodNotAllowed(h(func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.MethodNotAllowed, "Method %s is not allowed on %s.", r.Method, r.URL.Path)
	}).ServeHTTP)
}

// uploadsOnly serves next unless uploads are off (THUMBD_UPLOADS=false):
// the one place the switch is applied, to every POST route.
func uploadsOnly(cfg config, next pipeline.HandlerFunc) pipeline.HandlerFunc {
	if cfg.Uploads {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) error { return uploadsDisabled(r) }
}

// uploadsDisabled is the answer to a POST when THUMBD_UPLOADS=false: a 405
// (the route serves GET), given before a byte of the body is read, on a
// connection then closed rather than drained.
func uploadsDisabled(r *http.Request) error {
	return &apierr.Error{Code: apierr.UploadsDisabled, CloseConnection: true,
		Message: "POST " + r.URL.Path + " is off on this service (THUMBD_UPLOADS=false); GET is served."}
}

// ownRoots are the first segments of thumbd's own routes: an imgproxy
// prefix may not be one of them.
var ownRoots = []string{"thumbnail", "info", "health", "ready", "metrics", "json", "compute", "hash"}

// imgproxyConfig checks THUMBD_IMGPROXY_* against the other settings and
// builds the imgproxy parser's config.
func (c config) imgproxyConfig() (imgproxy.Config, error) {
	svc := imgproxyendpoint.Service{MaxSide: c.MaxSide, Signed: len(c.SigningKeys) > 0, Roots: ownRoots}
	if c.SourceBucket != nil {
		svc.Bucket, svc.BucketPrefix = c.SourceBucket.Bucket, c.SourceBucket.Prefix
	}
	return c.Imgproxy.Config(svc)
}
