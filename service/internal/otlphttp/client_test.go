package otlphttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		on      bool
		url     string
		timeout time.Duration
		header  string
		err     string
	}{
		{env: map[string]string{}},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true, url: "http://c:4318/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4318/"}, on: true, url: "https://c:4318/v1/traces", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}, on: true, url: "http://t:1/custom", timeout: 10 * time.Second},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x-tenant=7"},
			on: true, url: "http://t:1/x", timeout: 2500 * time.Millisecond, header: "a b"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, on: true, err: "not an http(s) URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, on: true, err: "OTEL_EXPORTER_OTLP_TIMEOUT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, on: true, err: "OTEL_EXPORTER_OTLP_HEADERS"},
	} {
		cfg, on, err := FromEnv(env(tc.env))
		if on != tc.on || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: on=%v err=%v", tc.env, on, err)
			continue
		}
		if tc.err != "" || !on {
			continue
		}
		if cfg.URL != tc.url || cfg.Timeout != tc.timeout || cfg.Headers.Get("Api-Key") != tc.header {
			t.Errorf("%v: %+v", tc.env, cfg)
		}
	}
}

// The request is what the collector's own generated type decodes, and a
// collector's refusal is an error.
func TestUploadTraces(t *testing.T) {
	var got collectortrace.ExportTraceServiceRequest
	var header http.Header
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		header = r.Header
		if err := proto.Unmarshal(b, &got); err != nil {
			t.Error(err)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	c := New(Config{URL: srv.URL + "/v1/traces", Headers: http.Header{"Api-Key": {"k"}}, Timeout: 5 * time.Second})
	spans := []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a", TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "b"}, {Name: "c"}}}}},
	}
	if err := c.UploadTraces(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if len(got.ResourceSpans) != 2 || !proto.Equal(got.ResourceSpans[0], spans[0]) || !proto.Equal(got.ResourceSpans[1], spans[1]) {
		t.Errorf("decoded %v", &got)
	}
	if header.Get("Content-Type") != "application/x-protobuf" || header.Get("Api-Key") != "k" {
		t.Errorf("headers %v", header)
	}
	status = http.StatusServiceUnavailable
	if err := c.UploadTraces(context.Background(), spans); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a 503: %v", err)
	}
	c.Stop(context.Background())
}

// A collector that redirects is refused, not followed: following would
// send the spans and the headers (OTEL_EXPORTER_OTLP_HEADERS, an API key)
// to wherever the redirect points. Every redirect status is tried, with a
// target on another port (what a 307 to an attacker's address looks like
// on loopback).
func TestUploadTracesFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Api-Key") != "" {
			t.Errorf("the redirect's target got the API key")
		}
	}))
	defer target.Close()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/v1/traces", status)
		}))
		c := New(Config{URL: srv.URL + "/v1/traces", Headers: http.Header{"Api-Key": {"k"}}, Timeout: 5 * time.Second})
		err := c.UploadTraces(context.Background(), []*tracepb.ResourceSpans{{}})
		if err == nil || !strings.Contains(err.Error(), strconv.Itoa(status)) || !strings.Contains(err.Error(), "redirect") {
			t.Errorf("a %d: %v, want an error naming the redirect", status, err)
		}
		c.Stop(context.Background())
		srv.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}
