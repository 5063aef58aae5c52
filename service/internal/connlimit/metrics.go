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
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_connections_waiting", Help: "Connections accepted on the serving port past its cap and waiting, unread, for a place (or probes for a place of their reserve); past 4096 more wait in the kernel's backlog.",
		}, func() float64 { return float64(l.Waiting()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_at_cap_seconds_total", Help: "Time the serving port spent at its cap of open connections, when new connections waited for a place (or were refused, THUMBD_PAST_CONNECTION_CAP=refuse).",
		}, func() float64 { return l.AtCap().Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_probes_total", Help: "Probe connections (GET or HEAD of /health, /ready or /metrics) served past the cap, in a reserve of places of their own, ahead of the connections waiting.",
		}, func() float64 { return float64(l.Probed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_closed_unread_total", Help: "Connections closed with bytes the client sent still unread (the rest of an upload refused unread, mostly), which the kernel answers with a reset: a client that has not read its answer by then loses it.",
		}, func() float64 { return float64(l.ClosedUnread()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_idle_closed_total", Help: "Connections whose place was taken back to make room at the cap, or at their address's cap (THUMBD_MAX_CONNECTIONS_PER_ADDRESS), after a second without a request in the works: keep-alive ones between requests, new ones that had not sent a whole request head. Those without a byte of a request are kept 5 s more, out of the cap, for a request on its way (served if the cap has room again within 1 s, else answered with a 503), then closed.",
		}, func() float64 { return float64(l.IdleClosed()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_idle_refused_total", Help: "Connections closed to make room at the cap (thumbd_connections_idle_closed_total) whose client sent a request in the 5 s they were kept for one, and was sent a 503 for it (the cap had no room within 1 s) instead of a close.",
		}, func() float64 { return float64(l.IdleRefused()) }),
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
	for r := range unansweredReasons {
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "thumbd_connections_unanswered_total", Help: "Connections closed on the serving port with a request begun and no answer: reason answer_not_taken, closed at the cap while the client was not taking an answer begun; answer_timeout, the same at the write timeout; head_timeout, a request head begun and not finished within the read-header timeout; refusal_failed, a 503 that could not be written.",
			ConstLabels: prometheus.Labels{"reason": unansweredName(r)},
		}, func() float64 { return float64(l.Unanswered(r)) }))
	}
	return out
}
