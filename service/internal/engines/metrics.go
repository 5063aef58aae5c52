package engines

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/cellpool"
	"github.com/thumbd/thumbd/service/internal/sandbox"
)

// cellMetrics exposes the pool (cells mode) and the sandbox its cells run
// in: read from the pool at each scrape, so the pool needs no Prometheus.
type cellMetrics struct {
	pool                                               *cellpool.Pool // nil in process
	cells, starts, exits, crashes, rss, layer, backOff *prometheus.Desc
}

func newCellMetrics(pool *cellpool.Pool) *cellMetrics {
	return &cellMetrics{
		pool:    pool,
		cells:   prometheus.NewDesc("thumbd_cells", "Cells (cells mode), by state: starting, idle, busy.", []string{"state"}, nil),
		starts:  prometheus.NewDesc("thumbd_cell_starts_total", "Cell processes started (cells mode).", nil, nil),
		exits:   prometheus.NewDesc("thumbd_cell_exits_total", "Cells that left the pool (cells mode), by reason.", []string{"reason"}, nil),
		crashes: prometheus.NewDesc("thumbd_cell_crashes_total", "Cells that died on their own or broke the protocol (cells mode), by how they ended.", []string{"exit"}, nil),
		rss:     prometheus.NewDesc("thumbd_cell_resident_memory_bytes", "Resident memory of the live cells, summed (cells mode).", nil, nil),
		backOff: prometheus.NewDesc("thumbd_cell_start_backoff_seconds", "How long the pool waits before starting the next cell while cells fail to start or die before their first job (cells mode; doubles to 5 s, 0 once a job is served).", nil, nil),
		layer:   prometheus.NewDesc("thumbd_sandbox_layer", "1 when the cells run with this sandbox layer on, 0 when it is off or there are no cells (in process).", []string{"layer"}, nil),
	}
}

func (m *cellMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.cells, m.starts, m.exits, m.crashes, m.rss, m.layer, m.backOff} {
		ch <- d
	}
}

func (m *cellMetrics) Collect(ch chan<- prometheus.Metric) {
	on := map[string]bool{}
	if m.pool != nil {
		for _, l := range m.pool.Layers() {
			on[l.Name] = l.On
		}
	}
	for _, name := range sandbox.Names() {
		v := 0.0
		if on[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(m.layer, prometheus.GaugeValue, v, name)
	}
	if m.pool == nil {
		return
	}
	s := m.pool.Stats()
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Starting), "starting")
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Idle), "idle")
	ch <- prometheus.MustNewConstMetric(m.cells, prometheus.GaugeValue, float64(s.Busy), "busy")
	ch <- prometheus.MustNewConstMetric(m.starts, prometheus.CounterValue, float64(s.Started))
	for _, reason := range cellpool.ExitReasons() {
		ch <- prometheus.MustNewConstMetric(m.exits, prometheus.CounterValue, float64(s.Exits[reason]), reason)
	}
	for exit, n := range s.Crashes {
		ch <- prometheus.MustNewConstMetric(m.crashes, prometheus.CounterValue, float64(n), exit)
	}
	ch <- prometheus.MustNewConstMetric(m.rss, prometheus.GaugeValue, float64(s.RSS))
	ch <- prometheus.MustNewConstMetric(m.backOff, prometheus.GaugeValue, s.StartBackOff.Seconds())
}

// Collectors are eng's metrics: its mode's own (Collector), the mode
// (thumbd_engine_info, mode as THUMBD_ENGINE names it) and libvips'
// memory, read only once started is closed.
func Collectors(eng Engine, mode string, started <-chan struct{}) []prometheus.Collector {
	engineInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "thumbd_engine_info", Help: "The engine mode (THUMBD_ENGINE): always 1.", ConstLabels: prometheus.Labels{"mode": mode},
	})
	engineInfo.Set(1)
	return []prometheus.Collector{engineInfo, eng.Collector(),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_libvips_memory_bytes", Help: "Memory libvips tracks as allocated now (cells mode: summed over the cells, as of their last job).",
		}, func() float64 { return libvipsMemory(eng, started, false) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "thumbd_libvips_memory_peak_bytes", Help: "Highest memory libvips tracked as allocated since start (cells mode: in any one cell).",
		}, func() float64 { return libvipsMemory(eng, started, true) }),
	}
}

// libvipsMemory reads libvips' counters only once the engine has started
// (in cells mode, from what the cells reported: the supervisor never
// starts libvips).
func libvipsMemory(eng Engine, started <-chan struct{}, peak bool) float64 {
	select {
	case <-started:
	default:
		return 0
	}
	cur, high := eng.Memory()
	if peak {
		return float64(high)
	}
	return float64(cur)
}
