package main

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// version is set at link time (-ldflags "-X main.version=...").
var version = "dev"

// metrics are the service's own instruments, registered on an explicit
// registry that is passed in.
type metrics struct {
	*pipeline.Metrics // the engine routes' pipeline's
	requests          *prometheus.CounterVec
	duration          *prometheus.HistogramVec
	inFlight          prometheus.Gauge
	fetchTime         prometheus.Histogram
	fetchBytes        prometheus.Histogram
	fetchErrors       *prometheus.CounterVec
}

// newMetrics registers the service's metrics; signingKeys is how many keys
// verify signed URLs (0: signing is off).
func newMetrics(reg prometheus.Registerer, gate *admission.Gate, life *lifecycle, eng engines.Engine, mode string, signingKeys int) *metrics {
	m := &metrics{
		Metrics: pipeline.NewMetrics(reg),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "thumbd_http_request_duration_seconds", Help: "Time to answer HTTP requests, by route pattern and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "code"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "thumbd_http_requests_in_flight", Help: "HTTP requests being served.",
		}),
		fetchTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "thumbd_origin_fetch_duration_seconds", Help: "Time to fetch a source from an origin (GET /thumbnail?url=), failed fetches included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		fetchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "thumbd_origin_fetch_bytes", Help: "Size of the sources fetched from origins.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
		}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_origin_fetch_errors_total", Help: "Origin fetches that failed, by the error code they were answered with.",
		}, []string{"code"}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_build_info", Help: "Build of the running thumbd: always 1.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "libvips": thumb.Version()},
	})
	buildInfo.Set(1)
	engineInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_engine_info", Help: "The engine mode (THUMBD_ENGINE): always 1.", ConstLabels: prometheus.Labels{"mode": mode},
	})
	engineInfo.Set(1)
	signing := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_signing_keys", Help: "Keys that verify signed URLs (THUMBD_SIGNING_KEYS); 0: signed URLs are off, thumbnail URLs are served unsigned.",
	})
	signing.Set(float64(signingKeys))
	reg.MustRegister(m.requests, m.duration, m.inFlight, buildInfo, engineInfo, signing, eng.Collector(),
		m.fetchTime, m.fetchBytes, m.fetchErrors,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_thumbnail_queue_length", Help: "Admitted thumbnails waiting for a processing slot.",
		}, func() float64 { return float64(gate.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_thumbnail_jobs_running", Help: "Thumbnails being processed by libvips.",
		}, func() float64 { return float64(gate.Running()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_libvips_memory_bytes", Help: "Memory libvips tracks as allocated now (cells mode: summed over the cells, as of their last job).",
		}, func() float64 { return libvipsMemory(life, eng, false) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_libvips_memory_peak_bytes", Help: "Highest memory libvips tracked as allocated since start (cells mode: in any one cell).",
		}, func() float64 { return libvipsMemory(life, eng, true) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_ready", Help: "1 when /ready answers 200, else 0.",
		}, func() float64 {
			if life.state() == stateReady {
				return 1
			}
			return 0
		}),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// observeFetch records one origin fetch; code is "" on success.
func (m *metrics) observeFetch(d time.Duration, bytes int, code apierr.Code) {
	m.fetchTime.Observe(d.Seconds())
	if code != "" {
		m.fetchErrors.WithLabelValues(string(code)).Inc()
		return
	}
	m.fetchBytes.Observe(float64(bytes))
}

// libvipsMemory reads libvips' counters only once the engine has started
// (in cells mode, from what the cells reported: the supervisor never
// starts libvips).
func libvipsMemory(life *lifecycle, eng engines.Engine, peak bool) float64 {
	select {
	case <-life.engineReady:
	default:
		return 0
	}
	cur, high := eng.Memory()
	if peak {
		return float64(high)
	}
	return float64(cur)
}

// instrument counts and times every request by its chi route pattern (read
// after the handler ran, when chi has matched it), keeping the label set
// small: unknown paths share the label "unmatched".
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		start := time.Now()
		ww := wrapped(w)
		next.ServeHTTP(ww, r)
		route := routeLabel(r)
		code := strconv.Itoa(ww.Status())
		m.requests.WithLabelValues(route, methodLabel(r.Method), code).Inc()
		observe(m.duration.WithLabelValues(route, code), time.Since(start).Seconds(), trace.SpanFromContext(r.Context()))
	})
}

// wrapped is w as a writer that records the status and size written: the
// request log's own wrapper when it has one, so a request goes through
// one wrapper, not one per middleware.
func wrapped(w http.ResponseWriter) *statusWriter {
	if ww, ok := w.(*statusWriter); ok {
		return ww
	}
	return &statusWriter{ResponseWriter: w}
}

// statusWriter records an answer's status and the bytes of its body. It is
// thumbd's own rather than chi's middleware.WrapResponseWriter: that
// package links net/http/pprof (and with it runtime/pprof, html and their
// initialisers) into the binary for a profiler thumbd does not serve
// (docs/coldstart.md). Flushing and hijacking go through Unwrap
// (http.ResponseController).
type statusWriter struct {
	http.ResponseWriter
	status, bytes int
}

func (w *statusWriter) WriteHeader(code int) {
	switch {
	case w.status != 0:
		return // net/http would log a second one as superfluous
	case code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols:
		// Informational: the final status is still to come.
	default:
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

// Status is the answer's status, 0 while none was written.
func (w *statusWriter) Status() int { return w.status }

// BytesWritten is the size of the body written so far.
func (w *statusWriter) BytesWritten() int { return w.bytes }

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// routeLabel is r's chi route pattern, read after the handler ran (when
// chi has matched it); unknown paths share "unmatched", so label sets stay
// small.
func routeLabel(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return rc.RoutePattern()
	}
	return "unmatched"
}

// observe records v, with the trace ID as its exemplar when the request
// is traced and sampled: a slow bucket in the OpenMetrics exposition leads
// to a trace that fell in it.
func observe(o prometheus.Observer, v float64, span trace.Span) {
	sc := span.SpanContext()
	if eo, ok := o.(prometheus.ExemplarObserver); ok && sc.IsSampled() {
		eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": sc.TraceID().String()})
		return
	}
	o.Observe(v)
}

// metricsHandler serves the registry; a scraper that asks for OpenMetrics
// gets it, with the exemplars.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// methodLabel keeps the label set bounded whatever methods clients invent.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
		return m
	}
	return "other"
}
