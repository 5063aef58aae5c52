package origin

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/apierr"
)

// Metrics are the origin fetches' (Config.Observe is their Observe).
type Metrics struct {
	fetchTime   prometheus.Histogram
	fetchBytes  prometheus.Histogram
	fetchErrors *prometheus.CounterVec
}

// NewMetrics registers the origin fetches' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
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
	reg.MustRegister(m.fetchTime, m.fetchBytes, m.fetchErrors)
	return m
}

// Observe records one origin fetch; code is "" on success.
func (m *Metrics) Observe(d time.Duration, bytes int, code apierr.Code) {
	m.fetchTime.Observe(d.Seconds())
	if code != "" {
		m.fetchErrors.WithLabelValues(string(code)).Inc()
		return
	}
	m.fetchBytes.Observe(float64(bytes))
}
