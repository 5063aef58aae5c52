package hotkey

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thumbd/thumbd/bench/internal/probe"
)

func TestParse(t *testing.T) {
	c, err := parse([]string{"-herd", "7", "-baseline", "bin/thumbd-main -x", "--", "bin/thumbd"}, io.Discard)
	if err != nil || c.herd != 7 || len(c.baseline) != 2 || c.command[0] != "bin/thumbd" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range [][]string{{}, {"-herd", "0", "--", "x"}, {"-stream", "0", "--", "x"}} {
		if _, err := parse(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A herd reaches the server at once, and its answers are compared byte for
// byte; metric reads an unlabelled sample.
func TestHerdAndMetrics(t *testing.T) {
	var inFlight, most atomic.Int32
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprintf(w, "# HELP x\nthumbd_thumbnail_merged_total{a=\"b\"} 9\nthumbd_thumbnail_merged_total %d\n", served.Load())
			return
		case "/health":
			return
		}
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		served.Add(1)
		w.Write([]byte("same bytes"))
	}))
	defer srv.Close()
	wall, same, err := herd(context.Background(), 20, srv.URL+"/thumbnail?w=1")
	if err != nil || !same || wall <= 0 {
		t.Fatalf("wall %s same %t err %v", wall, same, err)
	}
	if most.Load() < 10 {
		t.Errorf("at most %d requests in flight at once, want the herd together", most.Load())
	}
	if v, err := probe.Metric(context.Background(), srv.URL, "thumbd_thumbnail_merged_total"); err != nil || v != 20 {
		t.Errorf("metric %v %v, want 20", v, err)
	}
	rps, p50, failed, err := closedLoop(context.Background(), 2, 200*time.Millisecond, func() string { return srv.URL + "/thumbnail" })
	if err != nil || rps <= 0 || p50 < 20 || failed != 0 {
		t.Errorf("closed loop: %v rps, p50 %v, %d failed, %v", rps, p50, failed, err)
	}
}
