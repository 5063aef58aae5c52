package main

import (
	"fmt"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
)

// testEngine starts libvips once: govips cannot start it twice in one
// process. Tests make engine values of their own for their limits.
var testEngine *thumb.Engine

func TestMain(m *testing.M) {
	// In cells mode thumbd execs itself as `thumbd cell`: this test binary
	// becomes the cell, with a fault injector around libvips when asked.
	if len(os.Args) > 1 && os.Args[1] == "cell" {
		if faults := cellFaults(); faults != "" {
			if err := runFaultyCell(faults); err != nil {
				fmt.Fprintln(os.Stderr, "thumbd:", err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		main()
		os.Exit(0)
	}
	// The shutdown tests run the real program in a child process: this test
	// binary re-executed with THUMBD_TEST_MAIN=1 becomes thumbd.
	if os.Getenv("THUMBD_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	testEngine = thumb.New(thumbjob.Config{MaxPixels: 40_000_000, MaxFrames: 256, MaxSide: 4096, MaxAnimationPixels: 1 << 24, Threads: 1, AVIFEffort: 4,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	testEngine.Start()
	os.Exit(m.Run())
}

// testConfig is the default configuration, as loaded from an empty
// environment.
func testConfig(t *testing.T) config {
	t.Helper()
	cfg, err := loadConfig(nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// sourceRoot is cfg.SourceDir opened, as serve opens it (nil: none).
func sourceRoot(t *testing.T, cfg config) *os.Root {
	t.Helper()
	if cfg.SourceDir == "" {
		return nil
	}
	root, err := os.OpenRoot(cfg.SourceDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// newTestDeps wires the service around the shared engine, already started.
func newTestDeps(t *testing.T, cfg config) deps {
	t.Helper()
	root := sourceRoot(t, cfg)
	life := lifecycle.New()
	life.EngineStarted()
	// libvips is up (testEngine started it); an engine value of its own
	// carries this configuration's limits.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng := thumb.New(engineConfig(cfg, logger))
	if err := eng.LoadWatermark(); err != nil {
		t.Fatal(err)
	}
	return newDeps(cfg, logger, engines.InProcess{Engine: eng}, life, root, nil)
}

func newTestServer(t *testing.T, cfg config) (*httptest.Server, deps) {
	t.Helper()
	d := newTestDeps(t, cfg)
	return newTestServerFrom(t, d), d
}

func newTestServerFrom(t *testing.T, d deps) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newServer(d))
	t.Cleanup(srv.Close)
	return srv
}

// do sends a request with header name, value pairs (a name may repeat)
// and returns the status, headers and body.
func do(t *testing.T, method, url string, body io.Reader, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// errorBody is the API's error answer, as a client reads it.
type errorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// cacheCount is the result cache's thumbd_cache_<name>_total now.
func cacheCount(t *testing.T, d deps, name string) float64 {
	t.Helper()
	return metricSum(t, d, "thumbd_cache_"+name+"_total")
}

// metricSum is a counter's or gauge's value in d's registry now, summed
// over its labels.
func metricSum(t *testing.T, d deps, name string) float64 {
	t.Helper()
	families, err := d.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			var sum float64
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
			return sum
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}
