package main

import (
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/httpmetrics"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// metrics are the service's own instruments, registered on an explicit
// registry that is passed in.
type metrics struct {
	*pipeline.Metrics // the engine routes' pipeline's
	http              *httpmetrics.Metrics
	fetchTime         prometheus.Histogram
	fetchBytes        prometheus.Histogram
	fetchErrors       *prometheus.CounterVec
}

// newMetrics registers the service's metrics; signingKeys is how many keys
// verify signed URLs (0: signing is off).
func newMetrics(reg prometheus.Registerer, build buildinfo.Info, gate *admission.Gate, life *lifecycle, eng engines.Engine, mode string, signingKeys int) *metrics {
	m := &metrics{
		Metrics: pipeline.NewMetrics(reg, gate), http: httpmetrics.New(reg),
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
		Name: "thumbd_build_info", Help: "Build of the running thumbd (thumbd version): always 1.",
		ConstLabels: prometheus.Labels{"version": build.Version, "revision": build.Revision, "goversion": runtime.Version(),
			"flavour": build.Flavour, "libvips": thumb.Version()},
	})
	buildInfo.Set(1)
	// One series per C library of the recipe, none for the dynamic build
	// (Debian's shared libraries): a fixed set of about 14, known at build.
	libraryInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "thumbd_library_info", Help: "A C library of the libvips recipe linked into the running thumbd (thumbd version), with its upstream version and Debian revision: always 1.",
	}, []string{"library", "version", "revision"})
	for _, l := range build.Libraries {
		libraryInfo.WithLabelValues(l.Package, l.Version, l.Revision).Set(1)
	}
	engineInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_engine_info", Help: "The engine mode (THUMBD_ENGINE): always 1.", ConstLabels: prometheus.Labels{"mode": mode},
	})
	engineInfo.Set(1)
	signing := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_signing_keys", Help: "Keys that verify signed URLs (THUMBD_SIGNING_KEYS); 0: signed URLs are off, thumbnail URLs are served unsigned.",
	})
	signing.Set(float64(signingKeys))
	reg.MustRegister(buildInfo, libraryInfo, engineInfo, signing, eng.Collector(),
		m.fetchTime, m.fetchBytes, m.fetchErrors,
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
		// The runtime's and the process's metrics are of no use before a
		// scrape; building the Go collector is the dearest part of the
		// registry (runtime/metrics' descriptions, a descriptor each).
		onFirstScrape(func() prometheus.Collector { return collectors.NewGoCollector() }),
		onFirstScrape(func() prometheus.Collector {
			return collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
		}),
	)
	return m
}

// firstScrape is a collector built by its first Collect instead of at
// start, so that nothing /health waits for builds it. It describes
// nothing, which makes it an unchecked collector to the registry: what it
// yields is checked when gathered (no two series alike), not when
// registered.
type firstScrape struct {
	once  sync.Once
	build func() prometheus.Collector
	c     prometheus.Collector
}

func onFirstScrape(build func() prometheus.Collector) *firstScrape {
	return &firstScrape{build: build}
}

func (f *firstScrape) Describe(chan<- *prometheus.Desc) {}

func (f *firstScrape) Collect(ch chan<- prometheus.Metric) {
	f.once.Do(func() { f.c = f.build() })
	f.c.Collect(ch)
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

// metricsHandler serves the registry; a scraper that asks for OpenMetrics
// gets it, with the exemplars.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}
