package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/admission"
)

// Metrics are the pipeline's own instruments, its admission gate's gauges
// among them. The result cache's
// (thumbd_cache_*) are the cache's: results.Cache.Collector.
type Metrics struct {
	QueueWait  prometheus.Histogram
	Processing prometheus.Histogram
	// InfoProcessing is Processing's twin for /info, by whether the job
	// made a ThumbHash (a decode) or read only the header.
	InfoProcessing *prometheus.HistogramVec
	SourceBytes    prometheus.Histogram
	// SourceRead counts the bytes read from sources, by whether they
	// were read by range (a video's index and packets) or whole.
	SourceRead *prometheus.CounterVec
	Rejections *prometheus.CounterVec
	Merged     prometheus.Counter
	Panics     prometheus.Counter
	// Fallbacks count the answers the fallback image made in place of a
	// source that could not be read, by that error's code: the errors it
	// hides from clients.
	Fallbacks *prometheus.CounterVec
}

// NewMetrics registers the pipeline's metrics on reg.
func NewMetrics(reg prometheus.Registerer, gate *admission.Gate) *Metrics {
	m := &Metrics{
		QueueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "thumbd_thumbnail_queue_wait_seconds", Help: "Time admitted jobs (thumbnails and /info) waited for libvips and a processing slot.",
			Buckets: []float64{.0001, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		Processing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "thumbd_thumbnail_processing_seconds", Help: "Time libvips spent on one thumbnail, decode to encode.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		InfoProcessing: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "thumbd_info_processing_seconds", Help: "Time the engine spent describing one source for /info, by whether it made a ThumbHash.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"thumbhash"}),
		SourceBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "thumbd_thumbnail_source_bytes", Help: "Size of the source images admitted.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 10),
		}),
		SourceRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_source_read_bytes_total", Help: "Bytes read from sources (uploads, files, objects, origins' images), by whether they were read by range (a video: its index and the packets of the frames decoded, and what finding them read) or whole.",
		}, []string{"ranged"}),
		Rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_thumbnail_rejections_total", Help: "Thumbnail and /info requests refused or failed, by reason.",
		}, []string{"reason"}),
		Merged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "thumbd_thumbnail_merged_total", Help: "Thumbnail and /info requests that joined an identical job in flight instead of starting one.",
		}),
		Panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "thumbd_thumbnail_panics_total", Help: "Shared jobs (thumbnail or /info) that panicked; their waiters were answered 500 internal_error, the process went on.",
		}),
		Fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "thumbd_thumbnail_fallbacks_total", Help: "Thumbnails whose source could not be read, answered with the fallback image (THUMBD_FALLBACK_IMAGE_PATH), by the error's code.",
		}, []string{"reason"}),
	}
	for _, hash := range []string{"true", "false"} {
		m.InfoProcessing.WithLabelValues(hash) // both series exist from the start
		m.SourceRead.WithLabelValues(hash)
	}
	reg.MustRegister(m.QueueWait, m.Processing, m.InfoProcessing, m.SourceBytes, m.SourceRead, m.Rejections, m.Merged, m.Panics, m.Fallbacks,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_thumbnail_queue_length", Help: "Admitted thumbnails waiting for a processing slot.",
		}, func() float64 { return float64(gate.Waiting()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_thumbnail_jobs_running", Help: "Thumbnails being processed by libvips.",
		}, func() float64 { return float64(gate.Running()) }))
	return m
}
