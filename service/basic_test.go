package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/benchroutes"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func TestBasicRoutes(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	fixture, err := os.ReadFile("testdata/json-document.json")
	if err != nil {
		t.Fatal(err)
	}
	sha := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     string      // exact body; empty: checked by code
		code                     apierr.Code // error code expected
	}{
		{"health", "GET", "/health", "", 200, `{"status":"ok"}`, ""},
		{"ready", "GET", "/ready", "", 200, `{"status":"ready"}`, ""},
		{"json fixture", "GET", "/json", "", 200, string(fixture), ""},
		{"compute default", "GET", "/compute", "", 200, `{"n":100000,"result":` + itoa(benchroutes.Compute(100000)) + `}`, ""},
		{"compute zero", "GET", "/compute?n=0", "", 200, `{"n":0,"result":0}`, ""},
		{"compute ten", "GET", "/compute?n=10", "", 200, `{"n":10,"result":1395}`, ""},
		{"compute negative", "GET", "/compute?n=-1", "", 400, "", apierr.BadParameter},
		{"compute fraction", "GET", "/compute?n=1.5", "", 400, "", apierr.BadParameter},
		{"compute word", "GET", "/compute?n=abc", "", 400, "", apierr.BadParameter},
		{"compute empty", "GET", "/compute?n=", "", 400, "", apierr.BadParameter},
		{"compute too large", "GET", "/compute?n=100000001", "", 400, "", apierr.BadParameter},
		{"compute bad escape", "GET", "/compute?n=%zz", "", 400, "", apierr.BadParameter},
		{"hash default", "GET", "/hash", "", 200, `{"algorithm":"sha256","hex":"` + sha(strings.Repeat("0123456789abcdef", 64)) + `"}`, ""},
		{"hash empty", "GET", "/hash?data=", "", 200, `{"algorithm":"sha256","hex":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`, ""},
		{"hash abc", "GET", "/hash?data=abc", "", 200, `{"algorithm":"sha256","hex":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`, ""},
		{"hash utf-8 escapes", "GET", "/hash?data=caf%C3%A9+au+lait", "", 200, `{"algorithm":"sha256","hex":"` + sha("café au lait") + `"}`, ""},
		{"hash bad escape", "GET", "/hash?data=%G1", "", 400, "", apierr.BadParameter},
		{"hash post", "POST", "/hash?data=ignored", "abc", 200, `{"algorithm":"sha256","hex":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}`, ""},
		{"hash post empty", "POST", "/hash", "", 200, `{"algorithm":"sha256","hex":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`, ""},
		{"unknown route", "GET", "/nope", "", 404, "", apierr.NotFound},
		{"wrong method", "DELETE", "/health", "", 405, "", apierr.MethodNotAllowed},
		{"wrong method thumbnail", "PUT", "/thumbnail", "", 405, "", apierr.MethodNotAllowed},
		{"sources off", "GET", "/thumbnail?src=a.jpg", "", 404, "", apierr.SourcesDisabled},
		{"thumbnail typo", "POST", "/thumbnail?widht=100", "", 400, "", apierr.BadParameter},
	}
	// Strict queries on every route (POST /hash ignores its query): an
	// unknown parameter or one given twice is a 400.
	for _, path := range []string{"/health?probe=1", "/ready?x", "/json?pretty=1", "/compute?m=10", "/compute?n=1&n=1",
		"/hash?data=a&data=b", "/hash?data=a&salt=b"} {
		tests = append(tests, struct {
			name, method, path, body string
			status                   int
			want                     string
			code                     apierr.Code
		}{"strict " + path, "GET", path, "", 400, "", apierr.BadParameter})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := do(t, tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if status != tc.status {
				t.Fatalf("status %d, want %d (body %s)", status, tc.status, body)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if h.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if tc.want != "" && string(body) != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", body, tc.want)
			}
			if tc.code != "" {
				assertError(t, body, tc.code)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// assertError checks the API's error shape: a sentence and the code.
func assertError(t *testing.T, body []byte, code apierr.Code) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if e.Code != string(code) {
		t.Fatalf("code %q, want %q (%s)", e.Code, code, e.Error)
	}
	if len(e.Error) < 10 || !strings.HasSuffix(e.Error, ".") {
		t.Fatalf("error message %q is not a sentence", e.Error)
	}
}

// The loop must match the contract's formula computed independently.
func TestComputeMatchesFormula(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 1000, 123457} {
		var want int64
		for i := int64(0); i < n; i++ {
			want = (want + (i*31)%1_000_000_007) % 1_000_000_007
		}
		if got := benchroutes.Compute(n); got != want {
			t.Errorf("Compute(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestHashPostBodyLimit(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxBodyBytes = 100
	srv, _ := newTestServer(t, cfg)
	status, _, body := do(t, "POST", srv.URL+"/hash", strings.NewReader(strings.Repeat("x", 101)))
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d (%s)", status, body)
	}
	assertError(t, body, apierr.BodyTooLarge)
	// A body streamed without Content-Length is cut at the limit as well.
	status, _, body = do(t, "POST", srv.URL+"/hash", struct{ *strings.Reader }{strings.NewReader(strings.Repeat("x", 101))})
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: status %d (%s)", status, body)
	}
	status, _, _ = do(t, "POST", srv.URL+"/hash", strings.NewReader(strings.Repeat("x", 100)))
	if status != http.StatusOK {
		t.Fatalf("at the limit: status %d", status)
	}
}

func TestRequestIDEchoedWhenValid(t *testing.T) {
	srv, _ := newTestServer(t, testConfig(t))
	_, h, _ := do(t, "GET", srv.URL+"/health", nil, "X-Request-Id", "abc-123")
	if got := h.Get("X-Request-Id"); got != "abc-123" {
		t.Errorf("valid id: got %q", got)
	}
	_, h, _ = do(t, "GET", srv.URL+"/health", nil, "X-Request-Id", "bad id\twith spaces")
	if got := h.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("invalid id replaced: got %q", got)
	}
}

// THUMBD_BENCH_ROUTES=false takes the benchmark contract's routes away
// (/json, /compute, /hash): they answer 404 not_found as routes that do
// not exist, and cost nothing. They are on by default.
func TestBenchRoutesSwitch(t *testing.T) {
	routes := []struct{ method, path string }{
		{"GET", "/json"}, {"GET", "/compute?n=100000000"}, {"GET", "/hash?data=x"}, {"POST", "/hash"},
	}
	cfg := testConfig(t)
	if !cfg.BenchRoutes {
		t.Fatal("benchmark routes are off by default")
	}
	on, _ := newTestServer(t, cfg)
	cfg.BenchRoutes = false
	off, _ := newTestServer(t, cfg)
	for _, r := range routes {
		if r.path == "/compute?n=100000000" {
			continue // 0.3 s of CPU: the default n stands for it on
		}
		if status, _, body := do(t, r.method, on.URL+r.path, strings.NewReader("x")); status != 200 {
			t.Errorf("on: %s %s: %d %s", r.method, r.path, status, body)
		}
	}
	for _, r := range routes {
		start := time.Now()
		status, _, body := do(t, r.method, off.URL+r.path, strings.NewReader("x"))
		if status != 404 {
			t.Errorf("off: %s %s: %d %s", r.method, r.path, status, body)
			continue
		}
		assertError(t, body, apierr.NotFound)
		if took := time.Since(start); took > 100*time.Millisecond {
			t.Errorf("off: %s %s took %s", r.method, r.path, took)
		}
	}
	for _, path := range []string{"/health", "/metrics"} {
		if status, _, _ := do(t, "GET", off.URL+path, nil); status != 200 {
			t.Errorf("off: %s: %d", path, status)
		}
	}
}
