package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	srv, d := newTestServer(t, testConfig(t))
	for i := 0; i < 3; i++ {
		do(t, "GET", srv.URL+"/health", nil)
	}
	do(t, "GET", srv.URL+"/no/such/route", nil)
	do(t, "BREW", srv.URL+"/health", nil)
	src := encodeJPEG(t, scene(200, 100), 90)
	do(t, "POST", srv.URL+"/thumbnail", bytes.NewReader(src))
	do(t, "POST", srv.URL+"/thumbnail", strings.NewReader("not an image"))
	do(t, "POST", srv.URL+"/thumbnail?w=0", bytes.NewReader(src))

	m := d.metrics
	checks := []struct {
		name      string
		got, want float64
	}{
		{"health 200", testutil.ToFloat64(m.http.Requests.WithLabelValues("/health", "GET", "200")), 3},
		{"unmatched 404", testutil.ToFloat64(m.http.Requests.WithLabelValues("unmatched", "GET", "404")), 1},
		{"unknown method", testutil.ToFloat64(m.http.Requests.WithLabelValues("unmatched", "other", "405")) + testutil.ToFloat64(m.http.Requests.WithLabelValues("/health", "other", "405")), 1},
		{"thumbnail 200", testutil.ToFloat64(m.http.Requests.WithLabelValues("/thumbnail", "POST", "200")), 1},
		{"unsupported", testutil.ToFloat64(m.Rejections.WithLabelValues("unsupported_format")), 1},
		{"bad parameter", testutil.ToFloat64(m.Rejections.WithLabelValues("bad_parameter")), 1},
		{"source bytes observed", float64(testutil.CollectAndCount(m.SourceBytes)), 1},
		{"in flight back to zero", testutil.ToFloat64(m.http.InFlight), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	lintClean(t, d.registry)
	// The exposition itself, as a scraper sees it.
	status, h, body := do(t, "GET", srv.URL+"/metrics", nil)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d type %q", status, h.Get("Content-Type"))
	}
	for _, name := range []string{
		"thumbd_http_requests_total", "thumbd_http_request_duration_seconds_bucket", "thumbd_http_requests_in_flight",
		"thumbd_thumbnail_queue_wait_seconds_bucket", "thumbd_thumbnail_processing_seconds_bucket", "thumbd_thumbnail_source_bytes_bucket",
		"thumbd_thumbnail_rejections_total", "thumbd_thumbnail_queue_length", "thumbd_thumbnail_jobs_running",
		"thumbd_libvips_memory_bytes", "thumbd_libvips_memory_peak_bytes", "thumbd_build_info", "thumbd_ready",
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if !bytes.Contains(body, []byte("\n"+name)) {
			t.Errorf("exposition lacks %s", name)
		}
	}
}

// lintClean fails t on every problem Prometheus' linter finds in reg.
func lintClean(t *testing.T, reg prometheus.Gatherer) {
	t.Helper()
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// The runtime's and the process's collectors are built by the first
// scrape, not at registration, once however many scrapes come at once,
// and their series are gathered from then on.
func TestFirstScrapeCollector(t *testing.T) {
	builds := 0
	c := onFirstScrape(func() prometheus.Collector { builds++; return collectors.NewGoCollector() })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if builds != 0 {
		t.Fatalf("built at registration")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := reg.Gather(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if builds != 1 {
		t.Errorf("built %d times, want once", builds)
	}
	if n, err := testutil.GatherAndCount(reg, "go_goroutines"); n != 1 || err != nil {
		t.Errorf("go_goroutines: %d series, %v", n, err)
	}
}
