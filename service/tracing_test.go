package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/thumb"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// The caller's trace, as a CDN or an instrumented client would send it.
const (
	callerTraceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID     = "00f067aa0ba902b7"
	callerTraceparen = "00-" + callerTraceID + "-" + callerSpanID + "-01"
)

// recorded is tracing through the real SDK, its spans kept in memory.
func recorded() (*tracing.Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	return tracing.With(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))), rec
}

// tracedServer is the in-process service with tracing on; logs holds its
// JSON log lines (debug level: successes are logged too).
func tracedServer(t *testing.T, cfg config) (*httptest.Server, *tracetest.SpanRecorder, *launch.Log) {
	t.Helper()
	tr, rec := recorded()
	logs := &launch.Log{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	life := lifecycle.New()
	life.EngineStarted()
	d := newDeps(cfg, logger, engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}, life, nil, tr)
	return newTestServerFrom(t, d), rec, logs
}

// spanTree indexes ended spans by name (each name once per trace here).
type spanTree map[string]sdktrace.ReadOnlySpan

// waitSpans waits until the server span of a request has ended (otelhttp
// ends it after the answer is written) and returns the trace's spans.
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, server string) spanTree {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tree := spanTree{}
		for _, s := range rec.Ended() {
			tree[s.Name()] = s
		}
		if _, ok := tree[server]; ok {
			return tree
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q among %v", server, tree.names())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (tree spanTree) names() []string {
	var n []string
	for k := range tree {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// childOf checks that child's parent is parent, in the same trace.
func (tree spanTree) childOf(t *testing.T, child, parent string) {
	t.Helper()
	c, p := tree[child], tree[parent]
	if c == nil || p == nil {
		t.Fatalf("%s or %s missing among %v", child, parent, tree.names())
	}
	if c.Parent().SpanID() != p.SpanContext().SpanID() || c.SpanContext().TraceID() != p.SpanContext().TraceID() {
		t.Errorf("%s's parent is %s, not %s (%s)", child, c.Parent().SpanID(), parent, p.SpanContext().SpanID())
	}
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// Tracing is off without an endpoint: the no-op tracer, the handler and
// the origin transport left as they are, and no goroutine started.
func TestTracingOffWithoutEndpoint(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		tr := tracingOf(t, env)
		var h http.Handler = &struct{ http.Handler }{http.NotFoundHandler()}
		rt := http.DefaultTransport
		if tr.On || tr.Transport(rt) != rt || tr.Handler(h, false) != h || tr.Handler(h, true) != h {
			t.Errorf("%v: tracing on, or the handler or transport wrapped", env)
		}
		if _, span := tr.Tracer.Start(context.Background(), "x"); span.IsRecording() {
			t.Errorf("%v: a span records", env)
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines, %d before", after, before)
	}
	tr := tracingOf(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"})
	if !tr.On {
		t.Fatal("endpoint set: tracing off")
	}
	tr.Shutdown(context.Background())
}

// tracingOf is tracing as run makes it from env: the settings read
// through loadConfig's lookup, then the exporter's variables through
// getenv. env is never the process environment.
func tracingOf(t testing.TB, env map[string]string) *tracing.Tracing {
	t.Helper()
	cfg, err := loadConfig(nil, envOf(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracing.Version = cfg.build.Version
	tr, err := tracing.New(context.Background(), cfg.Tracing, cfg.getenv)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The sampler and the resource are settings read through run's getenv,
// given to the SDK explicitly: values only in the map (the process
// environment says otherwise) decide them. Bad values stop start-up,
// naming the variable; a bad endpoint too.
func TestTracingReadsSettings(t *testing.T) {
	// The process environment says the opposite of the map: the map wins
	// (the SDK still reads the process', see tracing.Config.Resource).
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_SERVICE_NAME", "from-process")
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
		"OTEL_SERVICE_NAME": "thumbd-eu", "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,team=img%2Cthumbs,service.name=ignored",
		"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}
	rec := tracetest.NewSpanRecorder()
	tr := tracingOf(t, env)
	defer tr.Shutdown(context.Background())
	tr.Provider.(*sdktrace.TracerProvider).RegisterSpanProcessor(rec)
	if _, span := tr.Tracer.Start(context.Background(), "x"); span.IsRecording() {
		t.Error("ratio 0 sampled a span")
	}
	env["OTEL_TRACES_SAMPLER"] = "parentbased_always_off"
	delete(env, "OTEL_SERVICE_NAME")
	tr2 := tracingOf(t, env)
	defer tr2.Shutdown(context.Background())
	if _, span := tr2.Tracer.Start(context.Background(), "x"); span.IsRecording() {
		t.Error("parentbased_always_off sampled a root span")
	}
	env["OTEL_TRACES_SAMPLER"] = "always_on"
	env["OTEL_SERVICE_NAME"] = "thumbd-eu"
	tr3 := tracingOf(t, env)
	defer tr3.Shutdown(context.Background())
	tr3.Provider.(*sdktrace.TracerProvider).RegisterSpanProcessor(rec)
	_, span := tr3.Tracer.Start(context.Background(), "x")
	span.End()
	if len(rec.Ended()) != 1 {
		t.Fatal("always_on: no span")
	}
	res := map[string]string{}
	for _, kv := range rec.Ended()[0].Resource().Attributes() {
		res[string(kv.Key)] = kv.Value.Emit()
	}
	if res["service.name"] != "thumbd-eu" || res["deployment.environment"] != "test" || res["team"] != "img,thumbs" || res["service.version"] != "dev" {
		t.Errorf("resource %v", res)
	}
	// Without OTEL_SERVICE_NAME, the attributes' service.name; without
	// either, thumbd.
	for _, c := range []struct{ attrs, want string }{{"service.name=from-attrs", "from-attrs"}, {"", "thumbd"}} {
		cfg, err := loadConfig(nil, envOf(map[string]string{"OTEL_RESOURCE_ATTRIBUTES": c.attrs}), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cfg.Tracing.Resource(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := r.Set().Value("service.name"); got.Emit() != c.want {
			t.Errorf("attributes %q: service.name %q, want %q", c.attrs, got.Emit(), c.want)
		}
	}
	for _, bad := range []struct{ env, value, says string }{
		{"OTEL_TRACES_SAMPLER", "jaeger_remote", "want one of parentbased_always_on"},
		{"OTEL_TRACES_SAMPLER_ARG", "1.5", "want a ratio from 0 to 1"},
		{"OTEL_TRACES_SAMPLER_ARG", "half", "want a ratio from 0 to 1"},
		{"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment", "want key=value"},
		{"OTEL_RESOURCE_ATTRIBUTES", "a=%zz", "two hex digits"},
		{"OTEL_SERVICE_NAME", "a\nb", "control character"},
	} {
		_, err := loadConfig(nil, envOf(map[string]string{bad.env: bad.value}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.env) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s=%q: %v", bad.env, bad.value, err)
		}
	}
	cfg, _ := loadConfig(nil, envOf(nil), io.Discard)
	if _, err := tracing.New(context.Background(), cfg.Tracing, func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}[k]
	}); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Errorf("endpoint without a scheme: %v", err)
	}
}

// One thumbnail's trace: the server span joins the caller's trace, each
// pipeline stage is its child, the engine's own stages are the engine
// span's, and the engine span says what explains its time.
func TestTraceOfAThumbnail(t *testing.T) {
	srv, rec, logs := tracedServer(t, testConfig(t))
	src := encodeJPEG(t, scene(1600, 1200), 85)
	status, _, body := do(t, "POST", srv.URL+"/thumbnail?w=100&h=100&format=webp", bytes.NewReader(src), "traceparent", callerTraceparen, "tracestate", "cdn=edge7")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	tree := waitSpans(t, rec, "POST /thumbnail")
	server := tree["POST /thumbnail"]
	if got := server.SpanContext().TraceID().String(); got != callerTraceID {
		t.Errorf("trace ID %s, the caller's is %s", got, callerTraceID)
	}
	if got := server.Parent().SpanID().String(); got != callerSpanID || !server.Parent().IsRemote() {
		t.Errorf("server span's parent %s, want the caller's %s", got, callerSpanID)
	}
	if got := server.SpanContext().TraceState().String(); got != "cdn=edge7" {
		t.Errorf("tracestate %q, the caller's is cdn=edge7", got)
	}
	for _, stage := range []string{"parse", "admit.door", "source", "admit", "engine", "respond"} {
		tree.childOf(t, stage, "POST /thumbnail")
	}
	for _, stage := range []string{"decode", "resize", "encode"} {
		tree.childOf(t, stage, "engine")
	}
	// Stages follow one another in time.
	order := []string{"parse", "source", "admit", "engine", "respond"}
	for i := 1; i < len(order); i++ {
		if tree[order[i]].StartTime().Before(tree[order[i-1]].EndTime()) {
			t.Errorf("%s starts before %s ends", order[i], order[i-1])
		}
	}
	engine := tree["engine"]
	for key, want := range map[string]any{
		"thumbd.source.format": "jpeg", "thumbd.source.pixels": int64(1600 * 1200), "thumbd.shrink_on_load": int64(8),
		"thumbd.output.format": "webp", "thumbd.output.bytes": int64(len(body)), "thumbd.output.frames": int64(1),
	} {
		if v, ok := attr(engine, key); !ok || v.AsInterface() != want {
			t.Errorf("engine span %s = %v, want %v", key, v.AsInterface(), want)
		}
	}
	// The request's log line names the trace and the server span.
	line := logLine(t, logs, `"msg":"request"`)
	if line["trace_id"] != callerTraceID || line["span_id"] != server.SpanContext().SpanID().String() {
		t.Errorf("log line %v: want trace_id %s span_id %s", line, callerTraceID, server.SpanContext().SpanID())
	}
}

// logLine waits for the log line containing marker (the request line is
// written once the answer is).
func logLine(t *testing.T, logs *launch.Log, marker string) map[string]any {
	t.Helper()
	var m map[string]any
	waitFor(t, "a log line with "+marker, func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, marker) {
				return json.Unmarshal([]byte(l), &m) == nil
			}
		}
		return false
	})
	return m
}

// An error marks the stage that failed and the server span, with its API
// code; an untraced request starts a trace of its own.
func TestTraceOfAnError(t *testing.T) {
	srv, rec, _ := tracedServer(t, testConfig(t))
	status, _, _ := do(t, "POST", srv.URL+"/thumbnail", strings.NewReader("not an image"))
	if status != 415 {
		t.Fatalf("status %d", status)
	}
	tree := waitSpans(t, rec, "POST /thumbnail")
	if tree["POST /thumbnail"].Parent().IsValid() {
		t.Error("an untraced request's server span has a parent")
	}
	for _, name := range []string{"engine", "POST /thumbnail"} {
		s := tree[name]
		if code, _ := attr(s, "thumbd.error.code"); s.Status().Code != codes.Error || code.AsString() != string(apierr.UnsupportedFormat) {
			t.Errorf("%s: status %v, code %q", name, s.Status(), code.AsString())
		}
	}
	if _, ok := tree["respond"]; ok {
		t.Error("a respond span for an error (the error writer is the server span's)")
	}
	status, _, _ = do(t, "POST", srv.URL+"/thumbnail?widht=1", strings.NewReader("x"))
	if status != 400 {
		t.Fatalf("status %d", status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var parse sdktrace.ReadOnlySpan
		for _, s := range rec.Ended() {
			if s.Name() == "parse" && s.Status().Code == codes.Error {
				parse = s
			}
		}
		if parse != nil {
			if code, _ := attr(parse, "thumbd.error.code"); code.AsString() != string(apierr.BadParameter) {
				t.Errorf("parse span code %q", code.AsString())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no failed parse span")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// An origin fetch is a client span under the source stage, and the origin
// receives its traceparent: the origin's own traces join thumbd's.
func TestTraceOfAnOriginFetch(t *testing.T) {
	o, headers := recordingOrigin(t, encodeJPEG(t, scene(400, 300), 90))
	cfg := originConfig(t, true, "http://"+o.hostPort())
	srv, rec, _ := tracedServer(t, cfg)
	status, _, body := do(t, "GET", thumbURL(srv.URL, o.URL+"/a.jpg", "w=64"), nil, "traceparent", callerTraceparen)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	tree := waitSpans(t, rec, "GET /thumbnail")
	tree.childOf(t, "origin GET", "source")
	client := tree["origin GET"]
	want := "00-" + callerTraceID + "-" + client.SpanContext().SpanID().String() + "-01"
	if got := headers("traceparent"); len(got) != 1 || got[0] != want {
		t.Errorf("the origin received traceparent %q, want %q", got, want)
	}
}

// In cells mode the cell's stages come back with the result and are
// recorded as the engine span's children at the times the cell measured,
// between the hand-off to the cell and back.
func TestTraceOfACellsJob(t *testing.T) {
	tr, rec := recorded()
	cs := newCellsServerTraced(t, cellsConfig(t), "", tr)
	src := encodeJPEG(t, scene(400, 300), 90)
	status, _, body := postThumb(t, cs.URL, "?w=64&h=64", src)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	tree := waitSpans(t, rec, "POST /thumbnail")
	order := []string{"cell.send", "decode", "resize", "encode", "cell.return"}
	for i, name := range order {
		tree.childOf(t, name, "engine")
		if i > 0 && tree[name].StartTime().Before(tree[order[i-1]].EndTime()) {
			t.Errorf("%s starts before %s ends", name, order[i-1])
		}
	}
	engine := tree["engine"]
	if !tree["cell.send"].StartTime().After(engine.StartTime()) && !tree["cell.send"].StartTime().Equal(engine.StartTime()) ||
		tree["cell.return"].EndTime().After(engine.EndTime()) {
		t.Error("the cell's spans are outside the engine span")
	}
	if v, ok := attr(engine, "thumbd.cell.handoff_us"); !ok || v.AsInt64() < 0 {
		t.Errorf("handoff %v", v.AsInterface())
	}
	if v, _ := attr(engine, "thumbd.source.pixels"); v.AsInt64() != 400*300 {
		t.Errorf("source pixels %v", v.AsInterface())
	}
}

var exemplar = regexp.MustCompile(`thumbd_http_request_duration_seconds_bucket\{code="200",route="/thumbnail",le="[^"]+"\} \d+ # \{trace_id="([0-9a-f]{32})"\}`)

// The request latency histogram carries the trace ID as an exemplar, in
// the OpenMetrics exposition.
func TestLatencyExemplarsNameTheTrace(t *testing.T) {
	srv, rec, _ := tracedServer(t, testConfig(t))
	status, _, _ := postThumb(t, srv.URL, "?w=32", encodeJPEG(t, scene(64, 64), 80))
	if status != 200 {
		t.Fatal(status)
	}
	waitSpans(t, rec, "POST /thumbnail")
	_, h, body := do(t, "GET", srv.URL+"/metrics", nil, "Accept", "application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(h.Get("Content-Type"), "application/openmetrics-text") {
		t.Fatalf("Content-Type %q", h.Get("Content-Type"))
	}
	m := exemplar.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no exemplar on the thumbnail's latency:\n%s", grepLines(body, "duration_seconds_bucket"))
	}
	if string(m[1]) != tree(rec)["POST /thumbnail"].SpanContext().TraceID().String() {
		t.Errorf("exemplar trace %s", m[1])
	}
}

func tree(rec *tracetest.SpanRecorder) spanTree {
	tree := spanTree{}
	for _, s := range rec.Ended() {
		tree[s.Name()] = s
	}
	return tree
}

func grepLines(b []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// SIGTERM flushes the spans still in the batch: the real process, with
// the batch's delay far beyond the test, exports to a loopback OTLP/HTTP
// receiver before it exits.
func TestSpansFlushedOnSIGTERM(t *testing.T) {
	var mu sync.Mutex
	var spans []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", 400)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, s.Name)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	c := startChild(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_BSP_SCHEDULE_DELAY=600000", "THUMBD_SHUTDOWN_DELAY=0s")
	status, _, _ := postThumb(t, c.addr, "?w=32", encodeJPEG(t, scene(64, 64), 80))
	if status != 200 {
		t.Fatal(status)
	}
	mu.Lock()
	early := len(spans)
	mu.Unlock()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, c.logs)
	}
	mu.Lock()
	defer mu.Unlock()
	if early != 0 || !slices.Contains(spans, "POST /thumbnail") || !slices.Contains(spans, "engine") {
		t.Errorf("exported before SIGTERM: %d spans; after: %v\n%s", early, spans, c.logs)
	}
	if !strings.Contains(c.logs.String(), "tracing: on") {
		t.Errorf("no start-up line says tracing is on:\n%s", c.logs)
	}
}

// An unreachable collector costs a warning, never a request.
func TestUnreachableCollectorOnlyWarns(t *testing.T) {
	c := startChild(t, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT=500", "OTEL_BSP_SCHEDULE_DELAY=10", "THUMBD_SHUTDOWN_DELAY=0s")
	for range 3 {
		if status, _, _ := postThumb(t, c.addr, "?w=32", encodeJPEG(t, scene(64, 64), 80)); status != 200 {
			t.Fatal(status)
		}
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, c.logs)
	}
	if !strings.Contains(c.logs.String(), `"level":"WARN","msg":"tracing: export failed"`) {
		t.Errorf("no tracing warning:\n%s", c.logs)
	}
}

// Probes and scrapes make no trace.
func TestProbesAreNotTraced(t *testing.T) {
	srv, rec, _ := tracedServer(t, testConfig(t))
	for _, path := range []string{"/health", "/ready", "/metrics"} {
		do(t, "GET", srv.URL+path, nil)
	}
	do(t, "GET", srv.URL+"/nowhere", nil)
	tree := waitSpans(t, rec, "GET unmatched")
	if len(tree) != 1 {
		t.Errorf("spans %v, want only the unknown path's", tree.names())
	}
}

// The CPU tracing adds to a small thumbnail, in process (go test -bench
// Tracing -run X ./service): the spans, their export to a loopback sink
// that discards them, the log and exemplar fields.
func BenchmarkTracing(b *testing.B) {
	src := encodeJPEG(b, scene(400, 300), 70)
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			cfg, err := loadConfig(nil, envOf(nil), io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			var tr *tracing.Tracing
			if on {
				sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
				defer sink.Close()
				tr = tracingOf(b, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": sink.URL})
				defer tr.Shutdown(context.Background())
			}
			life := lifecycle.New()
			life.EngineStarted()
			logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
			h := newServer(newDeps(cfg, logger, engines.InProcess{Engine: thumb.New(engineConfig(cfg, logger))}, life, nil, tr))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("POST", "/thumbnail?w=256&h=256", bytes.NewReader(src)))
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

// A caller's tracestate is never sent on to an origin: a public client
// would otherwise stamp its own values onto thumbd's requests to other
// sites. By default the caller's trace is continued (thumbd behind an
// ingress or CDN that starts the trace), so the origin's traceparent
// carries the caller's trace ID.
func TestOriginGetsNoCallersTracestate(t *testing.T) {
	o, headers := recordingOrigin(t, encodeJPEG(t, scene(40, 30), 90))
	srv, rec, _ := tracedServer(t, originConfig(t, true, "http://"+o.hostPort()))
	status, _, body := do(t, "GET", thumbURL(srv.URL, o.URL+"/a.jpg", "w=20"), nil, "traceparent", callerTraceparen, "tracestate", "evil=stamp,cdn=edge7")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	tree := waitSpans(t, rec, "GET /thumbnail")
	if got := tree["GET /thumbnail"].SpanContext().TraceID().String(); got != callerTraceID {
		t.Errorf("trace %s: by default the caller's (%s) is continued", got, callerTraceID)
	}
	if states := headers("tracestate"); len(states) != 1 || states[0] != "" {
		t.Errorf("the origin received tracestate %q", states)
	}
	if parents := headers("traceparent"); len(parents) != 1 || !strings.HasPrefix(parents[0], "00-"+callerTraceID+"-") {
		t.Errorf("the origin received traceparent %q, want the caller's trace", parents)
	}
}

// THUMBD_TRACE_PUBLIC_ENDPOINT=true (thumbd exposed to the public): a
// caller's trace is linked, not continued. The server span starts a trace
// of thumbd's own, with a link to the caller's span; the origin sees
// thumbd's trace ID, never the caller's.
func TestPublicEndpointLinksCallersTrace(t *testing.T) {
	o, headers := recordingOrigin(t, encodeJPEG(t, scene(40, 30), 90))
	cfg := originConfig(t, true, "http://"+o.hostPort())
	cfg.TracePublicEndpoint = true
	srv, rec, _ := tracedServer(t, cfg)
	status, _, body := do(t, "GET", thumbURL(srv.URL, o.URL+"/a.jpg", "w=20"), nil, "traceparent", callerTraceparen, "tracestate", "evil=stamp")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	tree := waitSpans(t, rec, "GET /thumbnail")
	server := tree["GET /thumbnail"]
	own := server.SpanContext().TraceID().String()
	if own == callerTraceID || server.Parent().IsValid() {
		t.Errorf("trace %s, parent %v: the caller's trace was continued", own, server.Parent())
	}
	links := server.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID().String() != callerTraceID || links[0].SpanContext.SpanID().String() != callerSpanID {
		t.Errorf("links %+v: want one to the caller's span", links)
	}
	if server.SpanContext().TraceState().Len() != 0 {
		t.Errorf("tracestate %q taken from the caller", server.SpanContext().TraceState())
	}
	tree.childOf(t, "origin GET", "source")
	parents, states := headers("traceparent"), headers("tracestate")
	if len(parents) != 1 || !strings.HasPrefix(parents[0], "00-"+own+"-") || states[0] != "" {
		t.Errorf("the origin received traceparent %q, tracestate %q: want thumbd's own trace %s and no tracestate", parents, states, own)
	}
}

// recordingOrigin serves src and keeps the headers of every request it
// gets: headers(name) is each request's values of name, comma-joined.
func recordingOrigin(t *testing.T, src []byte) (*testOrigin, func(name string) []string) {
	var mu sync.Mutex
	var got []http.Header
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		serveBytes(src)(w, r)
	})
	return o, func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, h := range got {
			out = append(out, strings.Join(h.Values(name), ","))
		}
		return out
	}
}
