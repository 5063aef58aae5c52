package main

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/thumbd/thumbd/service/internal/admission"
	"github.com/thumbd/thumbd/service/internal/buildinfo"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/httpmetrics"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/origin"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// metrics are the service's own instruments, registered on an explicit
// registry that is passed in.
type metrics struct {
	*pipeline.Metrics // the engine routes' pipeline's
	http              *httpmetrics.Metrics
	origins           *origin.Metrics
}

// newMetrics registers the service's metrics; signingKeys is how many keys
// verify signed URLs (0: signing is off).
func newMetrics(reg prometheus.Registerer, build buildinfo.Info, gate *admission.Gate, life *lifecycle.Lifecycle, eng engines.Engine, mode string, signingKeys int) *metrics {
	m := &metrics{
		Metrics: pipeline.NewMetrics(reg, gate), http: httpmetrics.New(reg), origins: origin.NewMetrics(reg),
	}
	signing := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_signing_keys", Help: "Keys that verify signed URLs (THUMBD_SIGNING_KEYS); 0: signed URLs are off, thumbnail URLs are served unsigned.",
	})
	signing.Set(float64(signingKeys))
	reg.MustRegister(engines.Collectors(eng, mode, life.EngineReady())...)
	reg.MustRegister(build.Collectors(thumb.Version())...)
	reg.MustRegister(signing,
		life.Collector(),
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

// metricsHandler serves the registry; a scraper that asks for OpenMetrics
// gets it, with the exemplars.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}
