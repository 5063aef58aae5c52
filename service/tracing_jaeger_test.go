package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/toolbin"
)

// jaegerConfig is a Jaeger v2 that listens on loopback only: OTLP/HTTP in,
// memory storage, the query API (and UI) out; no other receiver, no
// telemetry of its own.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 1000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// jaeger is a running Jaeger: where to send OTLP, where to query.
type jaeger struct {
	otlp, query string
}

// startJaeger runs the binary THUMBD_JAEGER names (scripts/build-jaeger.sh
// builds it; scripts/test.sh sets it). Without it the test is skipped,
// except in CI, where it fails.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := toolbin.ForTest(t, "THUMBD_JAEGER", "scripts/build-jaeger.sh", "a real Jaeger")
	ports := freePorts(t, 3)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, ports[0], ports[1], ports[2]), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &launch.Log{}
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr, cmd.Dir = logs, logs, dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	j := &jaeger{otlp: fmt.Sprintf("http://127.0.0.1:%d", ports[2]), query: fmt.Sprintf("http://127.0.0.1:%d", ports[0])}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(j.query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger's query API did not answer within 60 s: %v\n%s", err, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts finds n free loopback ports (closed again for Jaeger to bind).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// jaegerSpan is a span as Jaeger's query API gives it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64 `json:"startTime"` // µs
	Duration  int64 `json:"duration"`  // µs
	Tags      []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) any {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// trace reads a trace back until it holds every span named in want.
func (j *jaeger) trace(t *testing.T, traceID string, want []string) map[string]jaegerSpan {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans := map[string]jaegerSpan{}
		resp, err := http.Get(j.query + "/api/traces/" + traceID)
		if err == nil {
			var body struct {
				Data []struct {
					Spans []jaegerSpan `json:"spans"`
				} `json:"data"`
			}
			if resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&body) == nil {
				for _, tr := range body.Data {
					for _, s := range tr.Spans {
						spans[s.OperationName] = s
					}
				}
			}
			resp.Body.Close()
		}
		missing := false
		for _, name := range want {
			_, ok := spans[name]
			missing = missing || !ok
		}
		if !missing {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s in Jaeger: spans %v, want %v", traceID, keys(spans), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keys(m map[string]jaegerSpan) []string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	return k
}

// checkTree checks each child's parent: tree maps a child to its parent.
func checkTree(t *testing.T, spans map[string]jaegerSpan, tree map[string]string) {
	t.Helper()
	for child, parent := range tree {
		if got, want := spans[child].parent(), spans[parent].SpanID; got != want {
			t.Errorf("%s's parent is %s, want %s (%s)", child, got, parent, want)
		}
	}
}

// The whole path to a real collector: the built program exports to Jaeger
// over OTLP/HTTP, in process and in cells mode; the traces read back
// through Jaeger's query API join the caller's, hold every stage under
// the server span, the cell's stages under the engine span, and the
// origin fetch whose traceparent the origin received.
func TestTracesInJaeger(t *testing.T) {
	j := startJaeger(t)
	src := encodeJPEG(t, scene(1200, 900), 85)
	var mu sync.Mutex
	received := map[string]string{} // origin path → traceparent
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received[r.URL.Path] = r.Header.Get("traceparent")
		mu.Unlock()
		serveBytes(src)(w, r)
	})
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.otlp, "OTEL_SERVICE_NAME=thumbd-test", "OTEL_BSP_SCHEDULE_DELAY=50",
		"THUMBD_ORIGINS=http://" + o.hostPort(), "THUMBD_ORIGINS_ALLOW_LOOPBACK=true"}
	stages := map[string]string{
		"parse": "GET /thumbnail", "admit.door": "GET /thumbnail", "source": "GET /thumbnail",
		"admit": "GET /thumbnail", "engine": "GET /thumbnail", "respond": "GET /thumbnail",
		"decode": "engine", "resize": "engine", "encode": "engine",
	}

	t.Run("in process, url=, traceparent", func(t *testing.T) {
		c := startChild(t, env...)
		traceID, caller := "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		status, _, body := do(t, "GET", thumbURL(c.addr, o.URL+"/inprocess.jpg", "w=128&h=128&format=webp"), nil,
			"traceparent", "00-"+traceID+"-"+caller+"-01")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		want := []string{"GET /thumbnail", "origin GET"}
		for name := range stages {
			want = append(want, name)
		}
		spans := j.trace(t, traceID, want)
		checkTree(t, spans, stages)
		checkTree(t, spans, map[string]string{"origin GET": "source"})
		if got := spans["GET /thumbnail"].parent(); got != caller {
			t.Errorf("the server span's parent is %s, want the caller's %s", got, caller)
		}
		for name, s := range spans {
			if s.TraceID != traceID {
				t.Errorf("%s: trace %s, want the caller's %s", name, s.TraceID, traceID)
			}
		}
		mu.Lock()
		got := received["/inprocess.jpg"]
		mu.Unlock()
		if want := "00-" + traceID + "-" + spans["origin GET"].SpanID + "-01"; got != want {
			t.Errorf("the origin received traceparent %q, want %q", got, want)
		}
		engine := spans["engine"]
		for key, want := range map[string]any{"thumbd.source.format": "jpeg", "thumbd.source.pixels": float64(1200 * 900),
			"thumbd.shrink_on_load": float64(4), "thumbd.output.format": "webp", "thumbd.output.bytes": float64(len(body))} {
			if got := engine.tag(key); got != want {
				t.Errorf("engine %s = %v (%T), want %v", key, got, got, want)
			}
		}
		logTrace(t, spans, "in process")
	})

	t.Run("cells", func(t *testing.T) {
		c := startChild(t, append(env, "THUMBD_ENGINE=cells")...)
		traceID, caller := "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
		status, _, body := postThumb(t, c.addr, "?w=96&h=96", src)
		if status != 200 {
			t.Fatalf("warm-up: status %d: %s", status, body)
		}
		status, _, body = do(t, "POST", c.addr+"/thumbnail?w=96&h=96", strings.NewReader(string(src)),
			"traceparent", "00-"+traceID+"-"+caller+"-01")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		cellStages := map[string]string{"cell.send": "engine", "decode": "engine", "resize": "engine", "encode": "engine",
			"cell.return": "engine", "engine": "POST /thumbnail", "source": "POST /thumbnail", "admit": "POST /thumbnail"}
		want := []string{"POST /thumbnail"}
		for name := range cellStages {
			want = append(want, name)
		}
		spans := j.trace(t, traceID, want)
		checkTree(t, spans, cellStages)
		if got := spans["POST /thumbnail"].parent(); got != caller {
			t.Errorf("the server span's parent is %s, want the caller's %s", got, caller)
		}
		// The cell's stages, at the times it measured, lie in order
		// within the engine span.
		engine := spans["engine"]
		prevEnd := engine.StartTime
		for _, name := range []string{"cell.send", "decode", "resize", "encode", "cell.return"} {
			s := spans[name]
			if s.StartTime < prevEnd || s.StartTime+s.Duration > engine.StartTime+engine.Duration {
				t.Errorf("%s [%d, +%d µs] out of order or outside the engine span [%d, +%d µs]", name, s.StartTime, s.Duration, engine.StartTime, engine.Duration)
			}
			prevEnd = s.StartTime + s.Duration
		}
		if engine.tag("thumbd.cell.handoff_us") == nil {
			t.Error("no hand-off cost on the engine span")
		}
		logTrace(t, spans, "cells")
	})
}

// row is a span in tree order, at its depth.
type row struct {
	span  jaegerSpan
	depth int
}

// treeOrder lists the spans depth first, children by start time.
func treeOrder(spans map[string]jaegerSpan) []row {
	children := map[string][]jaegerSpan{}
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
	}
	var roots []jaegerSpan
	for _, s := range spans {
		if p := s.parent(); byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var rows []row
	var walk func(s jaegerSpan, depth int)
	walk = func(s jaegerSpan, depth int) {
		rows = append(rows, row{s, depth})
		kids := children[s.SpanID]
		slices.SortFunc(kids, func(a, b jaegerSpan) int { return cmp.Compare(a.StartTime, b.StartTime) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return rows
}

// logTrace prints the trace as an indented tree (docs/observability.md's example);
// with THUMBD_TRACE_HTML=DIR it also writes it as a waterfall page,
// DIR/NAME.html (docs/trace-jaeger.png is a screenshot of one: the Jaeger
// binary built from the module proxy has no UI assets).
func logTrace(t *testing.T, spans map[string]jaegerSpan, title string) {
	t.Helper()
	rows := treeOrder(spans)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s%-*s +%6.2f ms %7.2f ms\n", strings.Repeat("  ", r.depth), 24-2*r.depth, r.span.OperationName,
			float64(r.span.StartTime-rows[0].span.StartTime)/1000, float64(r.span.Duration)/1000)
	}
	t.Logf("%s trace:\n%s", title, b.String())
	if dir := os.Getenv("THUMBD_TRACE_HTML"); dir != "" {
		path := filepath.Join(dir, strings.ReplaceAll(title, " ", "-")+".html")
		if err := os.WriteFile(path, []byte(waterfall(rows, title)), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// number prints a JSON number with thousands separators.
func number(v any) string {
	f, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	digits := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// waterfall is a trace as a page: one bar per span, placed on the trace's
// time line, as a tracing UI draws it.
func waterfall(rows []row, title string) string {
	root := rows[0].span
	total := float64(max(root.Duration, 1))
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><meta charset="utf-8"><style>
body{font:14px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:17px;margin:0 0 4px} p{margin:0 0 12px;color:#555}
.r{display:flex;align-items:center;height:26px;border-bottom:1px solid #eee}
.n{width:260px;white-space:nowrap;overflow:hidden} .t{position:relative;flex:1;height:16px}
.b{position:absolute;height:16px;border-radius:2px;background:#3a78c2}
.b.cell{background:#e08a1e} .b.io{background:#4aa564}
.d{position:absolute;font-size:12px;color:#333;white-space:nowrap;top:0}
.k{font-size:12px;color:#777;margin-top:10px}
</style><h1>thumbd · %s · %s</h1><p>trace %s · %.2f ms · %d spans (read back from Jaeger's query API)</p>`,
		html.EscapeString(root.OperationName), html.EscapeString(title), root.TraceID, total/1000, len(rows))
	for _, r := range rows {
		s := r.span
		class := "b"
		switch s.OperationName {
		case "cell.send", "decode", "resize", "encode", "cell.return":
			class += " cell"
		case "source", "origin GET":
			class += " io"
		}
		left := float64(s.StartTime-root.StartTime) / total * 100
		width := max(float64(s.Duration)/total*100, 0.3)
		label := fmt.Sprintf("%.2f ms", float64(s.Duration)/1000)
		if v := s.tag("thumbd.source.format"); v != nil && s.OperationName == "engine" {
			label += fmt.Sprintf(" · %v, %s px → %v, %s bytes · shrink-on-load %v", v, number(s.tag("thumbd.source.pixels")),
				s.tag("thumbd.output.format"), number(s.tag("thumbd.output.bytes")), s.tag("thumbd.shrink_on_load"))
		}
		pos := fmt.Sprintf("left:calc(%.2f%% + %.2f%% + 6px)", left, width)
		switch {
		case width > 40: // inside the bar
			pos = fmt.Sprintf("left:calc(%.2f%% + 6px);color:#fff", left)
		case left+width > 60:
			pos = fmt.Sprintf("right:calc(%.2f%% + 6px)", 100-left)
		}
		fmt.Fprintf(&b, `<div class="r"><div class="n" style="padding-left:%dpx">%s</div><div class="t"><div class="%s" style="left:%.2f%%;width:%.2f%%"></div><div class="d" style="%s">%s</div></div></div>`,
			r.depth*16, html.EscapeString(s.OperationName), class, left, width, pos, html.EscapeString(label))
	}
	b.WriteString(`<div class="k">blue: the HTTP process · green: the source · orange: measured inside the cell (or the hand-off to and from it)</div>`)
	return b.String()
}
