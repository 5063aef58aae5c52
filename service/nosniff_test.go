package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Every answer carries X-Content-Type-Options: nosniff, so that no browser
// reads an image, an error or a metrics page as something else: images,
// errors (thumbnail or router), 304s, health, metrics and the benchmark
// routes.
func TestEveryAnswerIsNosniff(t *testing.T) {
	src := encodeJPEG(t, scene(40, 30), 90)
	cfg := testConfig(t)
	cfg.SourceDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg.SourceDir, "a.jpg"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := newTestServer(t, cfg)
	_, thumbHeader, _ := do(t, "GET", srv.URL+"/thumbnail?src=a.jpg&w=10", nil)
	for _, tc := range []struct {
		method, path string
		body         []byte
		header       []string
	}{
		{"GET", "/health", nil, nil},
		{"GET", "/ready", nil, nil},
		{"GET", "/json", nil, nil},
		{"GET", "/compute?n=10", nil, nil},
		{"GET", "/hash?data=x", nil, nil},
		{"POST", "/hash", []byte("x"), nil},
		{"GET", "/metrics", nil, nil},
		{"POST", "/thumbnail?w=10", src, nil},
		{"GET", "/thumbnail?src=a.jpg&w=10", nil, []string{"If-None-Match", thumbHeader.Get("ETag")}},
		{"POST", "/thumbnail?widht=10", src, nil},
		{"POST", "/thumbnail", []byte("not an image"), nil},
		{"GET", "/thumbnail?src=missing.jpg", nil, nil},
		{"GET", "/compute?n=x", nil, nil},
		{"GET", "/no/such/route", nil, nil},
		{"DELETE", "/health", nil, nil},
	} {
		var body io.Reader
		if tc.body != nil {
			body = bytes.NewReader(tc.body)
		}
		status, h, _ := do(t, tc.method, srv.URL+tc.path, body, tc.header...)
		if tc.header != nil && status != 304 {
			t.Errorf("%s %s with If-None-Match: %d, want 304", tc.method, tc.path, status)
		}
		if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q", tc.method, tc.path, status, got)
		}
	}
}
