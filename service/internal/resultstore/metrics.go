package resultstore

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	hits, misses, lookupErrors, skipped, rejected prometheus.Counter
	writes, writeErrors, opened                   prometheus.Counter
	dropped                                       *prometheus.CounterVec
	lookup                                        prometheus.Histogram
}

func newMetrics() *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "thumbd_result_store_" + name, Help: help})
	}
	m := &metrics{
		hits:         counter("hits_total", "Thumbnails answered from the result store (after a result cache miss), with no engine job."),
		misses:       counter("misses_total", "Result store lookups that gave no result: absent, failed, timed out or skipped while the breaker is open."),
		lookupErrors: counter("lookup_errors_total", "Result store lookups that failed or timed out (THUMBD_RESULT_STORE_TIMEOUT), or found an unreadable object; counted in misses too."),
		rejected:     counter("rejected_total", "Stored objects found and not answered: a media type thumbd does not write, a body not of its type, or (with THUMBD_RESULT_STORE_KEY) no valid signature; counted in misses too."),
		skipped:      counter("lookups_skipped_total", "Result store lookups not tried: the breaker is open (the store failed repeatedly), 64 lookups are in flight, the request has less time left than the lookup timeout, or the source budget had no room for the object within the lookup's time; counted in misses too."),
		writes:       counter("writes_total", "Thumbnails written to the result store."),
		writeErrors:  counter("write_errors_total", "Result store writes that failed or timed out."),
		opened:       counter("breaker_opened_total", "Times the result store's breaker opened: lookups and writes skipped for its delay."),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "thumbd_result_store_writes_dropped_total",
			Help: "Result store writes dropped, by reason: queue_full (THUMBD_RESULT_STORE_QUEUE), store_down (breaker open), too_large (over THUMBD_MAX_BODY_BYTES), unstorable (metadata S3 cannot carry), closed (shutting down)."},
			[]string{"reason"}),
		lookup: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "thumbd_result_store_lookup_seconds",
			Help:    "Time of result store lookups, failed and timed out ones included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}}),
	}
	for _, r := range []string{"queue_full", "store_down", "too_large", "unstorable", "closed"} {
		m.dropped.WithLabelValues(r)
	}
	return m
}

// Collectors are the store's metrics, to register on the service's
// registry; queued reads the write-behind queue's bytes.
func (s *Store) Collectors() []prometheus.Collector {
	m := s.metrics
	return []prometheus.Collector{m.hits, m.misses, m.lookupErrors, m.skipped, m.rejected, m.writes, m.writeErrors, m.opened, m.dropped, m.lookup,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_result_store_queue_bytes",
			Help: "Bytes of results waiting to be written to the result store, within thumbd_result_store_queue_max_bytes."},
			func() float64 { return float64(s.queued.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_result_store_queue_max_bytes",
			Help: "The write-behind queue's bound (THUMBD_RESULT_STORE_QUEUE; 0: the store is off)."},
			func() float64 {
				if !s.On() {
					return 0
				}
				return float64(s.cfg.QueueBytes)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thumbd_result_store_breaker_open",
			Help: "1 while the result store's breaker is open (lookups and writes skipped), else 0."},
			func() float64 {
				if s.On() && s.breaker.IsOpen() {
					return 1
				}
				return 0
			}),
	}
}
