package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/toolbin"
)

// collectorConfig is an OpenTelemetry Collector on loopback: OTLP/HTTP in
// (thumbd's exporter, as it would speak to any collector), the same spans
// out as OTLP/HTTP JSON to the test's own endpoint; no telemetry of its own.
const collectorConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  otlphttp:
    endpoint: %s
    encoding: json
    compression: none
    retry_on_failure:
      enabled: false
service:
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [otlphttp]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
`

// collector is a running OpenTelemetry Collector: where to send OTLP, and
// the spans it has forwarded, by trace.
type collector struct {
	otlp string

	mu     sync.Mutex
	traces map[string][]exportedSpan
}

// startCollector runs the binary THUMBD_OTELCOL names
// (scripts/build-otelcol.sh builds it; scripts/test.sh sets it). Without
// it the test is skipped, except in CI, where it fails. The collector's
// receiver decodes what thumbd sends; the test reads only the JSON the
// collector forwards.
func startCollector(t *testing.T) *collector {
	t.Helper()
	bin := toolbin.ForTest(t, "THUMBD_OTELCOL", "scripts/build-otelcol.sh", "a real OpenTelemetry Collector")
	c := &collector{traces: map[string][]exportedSpan{}}
	sink := httptest.NewServer(http.HandlerFunc(c.receive))
	t.Cleanup(sink.Close)
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, collectorConfig, port, sink.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &launch.Log{}
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr, cmd.Dir = logs, logs, dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c.otlp = fmt.Sprintf("http://127.0.0.1:%d", port)
	// Ready when its receiver takes an (empty) export.
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Post(c.otlp+"/v1/traces", "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector's OTLP receiver did not answer within 60 s: %v\n%s", err, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// otlpJSON is the part of an OTLP/JSON ExportTraceServiceRequest the test
// reads. IDs are hex; 64-bit integers are strings, as protobuf's JSON
// mapping writes them.
type otlpJSON struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []struct {
				TraceID           string `json:"traceId"`
				SpanID            string `json:"spanId"`
				ParentSpanID      string `json:"parentSpanId"`
				Name              string `json:"name"`
				StartTimeUnixNano string `json:"startTimeUnixNano"`
				EndTimeUnixNano   string `json:"endTimeUnixNano"`
				Attributes        []struct {
					Key   string `json:"key"`
					Value struct {
						String *string  `json:"stringValue"`
						Int    *string  `json:"intValue"`
						Double *float64 `json:"doubleValue"`
						Bool   *bool    `json:"boolValue"`
					} `json:"value"`
				} `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

// receive is the endpoint the collector exports to: it keeps each span.
// An export it cannot read fails the export (and so the test, which then
// misses spans), with the reason in the collector's log.
func (c *collector) receive(w http.ResponseWriter, r *http.Request) {
	var req otlpJSON
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spans []exportedSpan
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				start, err1 := strconv.ParseInt(s.StartTimeUnixNano, 10, 64)
				end, err2 := strconv.ParseInt(s.EndTimeUnixNano, 10, 64)
				if err := errors.Join(err1, err2); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				e := exportedSpan{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name,
					StartTime: start / 1000, Duration: (end - start) / 1000, Attributes: map[string]any{}}
				for _, kv := range s.Attributes {
					switch v := kv.Value; {
					case v.String != nil:
						e.Attributes[kv.Key] = *v.String
					case v.Int != nil:
						n, err := strconv.ParseInt(*v.Int, 10, 64)
						if err != nil {
							http.Error(w, err.Error(), http.StatusBadRequest)
							return
						}
						e.Attributes[kv.Key] = float64(n)
					case v.Double != nil:
						e.Attributes[kv.Key] = *v.Double
					case v.Bool != nil:
						e.Attributes[kv.Key] = *v.Bool
					}
				}
				spans = append(spans, e)
			}
		}
	}
	c.mu.Lock()
	for _, s := range spans {
		c.traces[s.TraceID] = append(c.traces[s.TraceID], s)
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

// exportedSpan is a span as the collector forwarded it. Times are in µs;
// integer attributes are float64, as encoding/json gives numbers.
type exportedSpan struct {
	TraceID, SpanID, ParentSpanID, Name string
	StartTime, Duration                 int64
	Attributes                          map[string]any
}

func (s exportedSpan) parent() string { return s.ParentSpanID }

func (s exportedSpan) tag(key string) any { return s.Attributes[key] }

// trace waits until the collector has forwarded every span named in want
// for the trace, and returns the trace's spans by name.
func (c *collector) trace(t *testing.T, traceID string, want []string) map[string]exportedSpan {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans := map[string]exportedSpan{}
		c.mu.Lock()
		for _, s := range c.traces[traceID] {
			spans[s.Name] = s
		}
		c.mu.Unlock()
		missing := false
		for _, name := range want {
			_, ok := spans[name]
			missing = missing || !ok
		}
		if !missing {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s through the collector: spans %v, want %v", traceID, keys(spans), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func keys(m map[string]exportedSpan) []string {
	var k []string
	for name := range m {
		k = append(k, name)
	}
	return k
}

// checkTree checks each child's parent: tree maps a child to its parent.
func checkTree(t *testing.T, spans map[string]exportedSpan, tree map[string]string) {
	t.Helper()
	for child, parent := range tree {
		if got, want := spans[child].parent(), spans[parent].SpanID; got != want {
			t.Errorf("%s's parent is %s, want %s (%s)", child, got, parent, want)
		}
	}
}

// The whole path to a real collector: the built program exports to an
// OpenTelemetry Collector over OTLP/HTTP, in process and in cells mode; the
// traces the collector forwards join the caller's, hold every stage under
// the server span, the cell's stages under the engine span, and the
// origin fetch whose traceparent the origin received.
func TestTracesThroughCollector(t *testing.T) {
	j := startCollector(t)
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
	span  exportedSpan
	depth int
}

// treeOrder lists the spans depth first, children by start time.
func treeOrder(spans map[string]exportedSpan) []row {
	children := map[string][]exportedSpan{}
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
	}
	var roots []exportedSpan
	for _, s := range spans {
		if p := s.parent(); byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var rows []row
	var walk func(s exportedSpan, depth int)
	walk = func(s exportedSpan, depth int) {
		rows = append(rows, row{s, depth})
		kids := children[s.SpanID]
		slices.SortFunc(kids, func(a, b exportedSpan) int { return cmp.Compare(a.StartTime, b.StartTime) })
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
// DIR/NAME.html (docs/trace.png is a screenshot of one).
func logTrace(t *testing.T, spans map[string]exportedSpan, title string) {
	t.Helper()
	rows := treeOrder(spans)
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s%-*s +%6.2f ms %7.2f ms\n", strings.Repeat("  ", r.depth), 24-2*r.depth, r.span.Name,
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
</style><h1>thumbd · %s · %s</h1><p>trace %s · %.2f ms · %d spans (as an OpenTelemetry Collector forwarded them)</p>`,
		html.EscapeString(root.Name), html.EscapeString(title), root.TraceID, total/1000, len(rows))
	for _, r := range rows {
		s := r.span
		class := "b"
		switch s.Name {
		case "cell.send", "decode", "resize", "encode", "cell.return":
			class += " cell"
		case "source", "origin GET":
			class += " io"
		}
		left := float64(s.StartTime-root.StartTime) / total * 100
		width := max(float64(s.Duration)/total*100, 0.3)
		label := fmt.Sprintf("%.2f ms", float64(s.Duration)/1000)
		if v := s.tag("thumbd.source.format"); v != nil && s.Name == "engine" {
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
			r.depth*16, html.EscapeString(s.Name), class, left, width, pos, html.EscapeString(label))
	}
	b.WriteString(`<div class="k">blue: the HTTP process · green: the source · orange: measured inside the cell (or the hand-off to and from it)</div>`)
	return b.String()
}
