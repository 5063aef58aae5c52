// Package lifecycle is where the process is in its life (starting, ready,
// draining): /health and /ready answer from it, thumbd_ready reports it,
// and `thumbd health` asks /health for images without a shell or curl.
package lifecycle

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thumbd/thumbd/service/internal/params"
	"github.com/thumbd/thumbd/service/internal/pipeline"
)

// State is where the process is in its life: it answers /ready.
type State int32

const (
	Starting State = iota
	Ready
	Draining
)

func (s State) String() string {
	switch s {
	case Ready:
		return "ready"
	case Draining:
		return "draining"
	}
	return "starting"
}

// Lifecycle tracks the state and tells waiters when the engine is up.
type Lifecycle struct {
	current     atomic.Int32
	engineReady chan struct{} // closed once libvips has started
}

func New() *Lifecycle { return &Lifecycle{engineReady: make(chan struct{})} }

func (l *Lifecycle) State() State { return State(l.current.Load()) }

// EngineReady is closed once libvips has started.
func (l *Lifecycle) EngineReady() <-chan struct{} { return l.engineReady }

// EngineStarted marks libvips up; /ready turns 200 unless already draining.
func (l *Lifecycle) EngineStarted() {
	close(l.engineReady)
	l.current.CompareAndSwap(int32(Starting), int32(Ready))
}

// Drain turns /ready to 503 for good.
func (l *Lifecycle) Drain() { l.current.Store(int32(Draining)) }

// Collector is thumbd_ready.
func (l *Lifecycle) Collector() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "thumbd_ready", Help: "1 when /ready answers 200, else 0.",
	}, func() float64 {
		if l.State() == Ready {
			return 1
		}
		return 0
	})
}

// status is the body of /health and /ready.
type status struct {
	Status string `json:"status"`
}

func HandleHealth(w http.ResponseWriter, r *http.Request) error {
	if _, err := params.Query(r.URL.RawQuery); err != nil {
		return err
	}
	pipeline.WriteJSON(w, http.StatusOK, status{"ok"})
	return nil
}

func HandleReady(life *Lifecycle) pipeline.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, err := params.Query(r.URL.RawQuery); err != nil {
			return err
		}
		switch s := life.State(); s {
		case Ready:
			pipeline.WriteJSON(w, http.StatusOK, status{"ready"})
		default:
			pipeline.WriteJSON(w, http.StatusServiceUnavailable, status{s.String()})
		}
		return nil
	}
}
