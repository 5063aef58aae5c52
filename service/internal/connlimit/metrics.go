package connlimit

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the limiter's metrics, read from it at each scrape.
func (l *Limiter) Collectors() []prometheus.Collector {
	capacity := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_connections_max", Help: "The cap on open connections on the serving port (THUMBD_MAX_CONNECTIONS).",
	})
	capacity.Set(float64(l.max))
	out := []prometheus.Collector{
		capacity,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_connections_open", Help: "Connections open now on the serving port.",
		}, func() float64 { return float64(l.Open()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_at_cap_seconds_total", Help: "Time the serving port spent at its cap of open connections, when new connections waited in the kernel's backlog (or were refused, THUMBD_PAST_CONNECTION_CAP=refuse).",
		}, func() float64 { return l.AtCap().Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_idle_closed_total", Help: "Connections closed to make room at the cap, or at their address's cap (THUMBD_MAX_CONNECTIONS_PER_ADDRESS), after a second without a request in the works: keep-alive ones between requests, new ones that had not sent a whole request head.",
		}, func() float64 { return float64(l.IdleClosed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_refused_total", Help: "Connections past the cap accepted only to be sent a 503 and closed (THUMBD_PAST_CONNECTION_CAP=refuse).",
		}, func() float64 { return float64(l.Refused()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_address_refused_total", Help: "Connections accepted only to be sent a 503 and closed because their client address already had THUMBD_MAX_CONNECTIONS_PER_ADDRESS open.",
		}, func() float64 { return float64(l.AddressRefused()) }),
	}
	for r := range reasons {
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_slow_closed_total", Help: "Connections closed to make room at the cap because the client was too slow with its request's body or in taking the answer: reason body_stalled or answer_stalled, no byte for THUMBD_CLIENT_STALL_TIMEOUT; body_slow or answer_slow, slower than THUMBD_CLIENT_MIN_RATE.",
			ConstLabels: prometheus.Labels{"reason": reasonName(r)},
		}, func() float64 { return float64(l.SlowClosed(r)) }))
	}
	return out
}
