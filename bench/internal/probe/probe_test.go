package probe

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Metric reads the unlabelled sample, not a labelled one of the same name,
// and NaN for a series the server does not have.
func TestMetric(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP x\nthumbd_x_total{a=\"b\"} 9\nthumbd_x_total 20\n")
	}))
	defer srv.Close()
	ctx := context.Background()
	if v, err := Metric(ctx, srv.URL, "thumbd_x_total"); err != nil || v != 20 {
		t.Errorf("got %v %v, want 20", v, err)
	}
	if v, err := Metric(ctx, srv.URL, "thumbd_y_total"); err != nil || !math.IsNaN(v) {
		t.Errorf("absent: %v %v", v, err)
	}
	if s, body, err := Get(ctx, http.DefaultClient, srv.URL+"/metrics"); s != 200 || len(body) == 0 || err != nil {
		t.Errorf("get: %d %q %v", s, body, err)
	}
}

// Series reads every sample, labelled or not, and nothing from a server
// without /metrics.
func TestSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "# HELP x\nthumbd_x_total{a=\"b c\"} 9\nthumbd_x_total 20\n\n")
	}))
	defer srv.Close()
	got := Series(context.Background(), srv.URL)
	if len(got) != 2 || got[`thumbd_x_total{a="b c"}`] != 9 || got["thumbd_x_total"] != 20 {
		t.Errorf("got %v", got)
	}
	if got := Series(context.Background(), srv.URL+"/nothing"); got != nil {
		t.Errorf("no /metrics: %v", got)
	}
}

// A summary's percentiles take every probe, a failed one at the time it
// failed; the failures are counted, and the longest run of them.
func TestSummary(t *testing.T) {
	var s Samples
	for i := range 200 {
		s = append(s, Sample{Total: float64(i + 1), Status: 200})
	}
	s[10].Status, s[11].Status, s[50].Status = 0, 503, 0
	s = append(s, Sample{Total: 1000, Status: 0})
	sum := s.Summary()
	if sum.N != 201 || sum.Failed != 4 || sum.WorstRun != 2 || sum.Max != 1000 || sum.P50 != 101 || sum.P99 != 199 {
		t.Errorf("got %+v", sum)
	}
	if sum := (Samples{}).Summary(); sum.N != 0 || !math.IsNaN(sum.P99) {
		t.Errorf("none: %+v", sum)
	}
}

// The prober probes its URLs in turn, a line each: the URL, the times and
// the status, 0 for a probe with no answer within the timeout.
func TestProber(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	var out, errs bytes.Buffer
	err := RunProber(context.Background(), []string{"-n", "3", "-every", "1ms", "-timeout", "50ms", srv.URL + "/a", srv.URL + "/slow"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v %s", err, errs.String())
	}
	s := readSamples(&out)
	if len(s) != 3 || s[0].URL != srv.URL+"/a" || s[0].Status != 418 || s[1].Status != 0 || s[1].Total < 50 || s[2].URL != srv.URL+"/a" || s[0].Connect <= 0 {
		t.Errorf("got %+v", s)
	}
}
