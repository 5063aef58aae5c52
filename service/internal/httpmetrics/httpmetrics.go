// Package httpmetrics counts and times every HTTP request by its route
// pattern, method and status (thumbd_http_*), with labels kept bounded.
package httpmetrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/statuswriter"
)

// Metrics are the HTTP server's instruments.
type Metrics struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
	InFlight prometheus.Gauge
}

// New registers the HTTP server's metrics on reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "thumbd_http_request_duration_seconds", Help: "Time to answer HTTP requests, by route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "code"}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "thumbd_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
	}
	reg.MustRegister(m.Requests, m.Duration, m.InFlight)
	return m
}

// Instrument counts and times every request by its chi route pattern
// (read after the handler ran, when chi has matched it), keeping the label
// set small: unknown paths share the label "unmatched".
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.InFlight.Inc()
		defer m.InFlight.Dec()
		start := time.Now()
		ww := statuswriter.Wrap(w)
		next.ServeHTTP(ww, r)
		route := Route(r)
		code := strconv.Itoa(ww.Status())
		m.Requests.WithLabelValues(route, Method(r.Method), code).Inc()
		Observe(m.Duration.WithLabelValues(route, code), time.Since(start).Seconds(), trace.SpanFromContext(r.Context()))
	})
}

// Route is r's chi route pattern, read after the handler ran (when chi
// has matched it); unknown paths share "unmatched", so label sets stay
// small.
func Route(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// Labelled names the route label for the metrics, the log and the span
// (Route reads chi's pattern after the handler ran): a catch-all route's
// pattern says little, its label says what it serves.
func Labelled(label string, next http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if rc := chi.RouteContext(r.Context()); rc != nil {
			rc.RoutePatterns = []string{label}
		}
	}
}

// Method keeps the label set bounded whatever methods clients invent.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
		return m
	}
	return "other"
}

// Observe records v, with the trace ID as its exemplar when the request
// is traced and sampled: a slow bucket in the OpenMetrics exposition leads
// to a trace that fell in it.
func Observe(o prometheus.Observer, v float64, span trace.Span) {
	sc := span.SpanContext()
	if eo, ok := o.(prometheus.ExemplarObserver); ok && sc.IsSampled() {
		eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
		return
	}
	o.Observe(v)
}
