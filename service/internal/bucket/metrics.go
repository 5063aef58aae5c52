package bucket

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count every client's calls, labelled by the client's use
// (Options.Use) and the operation (stat, get, put, delete, check). Make
// one per registry and give it to every client.
type Metrics struct {
	duration *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
	errors   *prometheus.CounterVec
}

// NewMetrics registers the bucket metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "thumbd_bucket_request_duration_seconds", Help: "Time of calls to object storage, by use and operation, failed calls and retries included (a get until its body is closed).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"use", "op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_bucket_bytes_total", Help: "Object bytes read (get) and written (put) from and to object storage, by use and operation.",
		}, []string{"use", "op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_bucket_request_errors_total", Help: "Calls to object storage that failed, by use, operation and the error code they failed with.",
		}, []string{"use", "op", "code"}),
	}
	reg.MustRegister(m.duration, m.bytes, m.errors)
	return m
}

func (m *Metrics) observe(use, op string, d time.Duration, n int64, code string) {
	if m == nil {
		return
	}
	m.duration.WithLabelValues(use, op).Observe(d.Seconds())
	if n > 0 {
		m.bytes.WithLabelValues(use, op).Add(float64(n))
	}
	if code != "" {
		m.errors.WithLabelValues(use, op, code).Inc()
	}
}
