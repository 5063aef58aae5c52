package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// result is one mode's figures and the checks that failed.
type result struct {
	Mode            string         `json:"mode"`
	Malloc          string         `json:"malloc"`
	Clients         int            `json:"clients"`
	Backoff         bool           `json:"backoff_on_503"`
	Seconds         float64        `json:"seconds"`
	Requests        int            `json:"requests"`
	Statuses        map[string]int `json:"statuses"`
	RPS200          float64        `json:"rps_200"`
	P50ms           float64        `json:"p50_ms_200"`
	P99ms           float64        `json:"p99_ms_200"`
	MaxMs           float64        `json:"max_ms_200"`
	MaxAnyMs        float64        `json:"max_ms_any"`
	ServerMax200ms  float64        `json:"server_max_ms_200"`
	Over200Deadline int            `json:"over_deadline_200"`
	HealthPolls     int            `json:"health_polls"`
	HealthFails     int            `json:"health_fails"`
	HealthMaxMs     float64        `json:"health_max_ms"`
	PeakRSS         int64          `json:"peak_rss"`
	HWM             int64          `json:"vm_hwm"`
	RSSAfter        int64          `json:"rss_after_idle"`
	CPUSeconds      float64        `json:"server_cpu_s"`
	Lost            int            `json:"lost"`
	Refused         int            `json:"refused_at_connection"`
	ExitCode        int            `json:"exit_code"`
	Containment     *containment   `json:"containment,omitempty"`
	Notes           []string       `json:"notes"`
	Failures        []string       `json:"failures"`
}

func (r *result) fail(format string, a ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, a...))
}
func (r *result) note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

// summarise fills the request figures of r from rec.
func summarise(r *result, rec *recorder, o options, p *proc) {
	r.Statuses = map[string]int{}
	var lat200 []float64
	for _, x := range rec.all {
		r.Requests++
		key := strconv.Itoa(x.status)
		if x.kind != "answer" {
			key = x.kind
		}
		r.Statuses[key]++
		ms := float64(x.latency.Microseconds()) / 1000
		r.MaxAnyMs = max(r.MaxAnyMs, ms)
		if x.kind == "refused" {
			r.Refused++
		}
		if x.kind == "answer" && x.status == 200 {
			lat200 = append(lat200, ms)
			if x.latency > o.deadline {
				r.Over200Deadline++
			}
		}
	}
	sort.Float64s(lat200)
	if n := len(lat200); n > 0 {
		r.P50ms, r.P99ms, r.MaxMs = lat200[n/2], lat200[min(n-1, n*99/100)], lat200[n-1]
		r.RPS200 = float64(n) / r.Seconds
	}
	p.logs.mu.Lock()
	r.ServerMax200ms = p.logs.durMax[200]
	p.logs.mu.Unlock()
}

// checkAnswers applies the common checks: no 5xx but 503 with Retry-After,
// no lost answer, every answer the server logged received in full.
//
// In the shutdown mode a request whose connection broke without thumbd
// ever logging it (a keep-alive connection closed by Shutdown as the next
// request was being written: broken pipe, reset, EOF) was never read, so
// never admitted: it counts as refused at connection level. Elsewhere any
// broken request is lost.
func checkAnswers(r *result, rec *recorder, p *proc, draining bool) {
	got := map[string]bool{}
	var examples []string
	if draining {
		p.logs.mu.Lock()
		for i, x := range rec.all {
			if _, logged := p.logs.answered[x.id]; x.kind == "error" && !logged {
				rec.all[i].kind = "refused"
				r.Refused++
				r.Statuses["error"]--
				r.Statuses["refused"]++
			}
		}
		p.logs.mu.Unlock()
		if r.Statuses["error"] == 0 {
			delete(r.Statuses, "error")
		}
	}
	for _, x := range rec.all {
		if x.kind == "answer" {
			got[x.id] = true
			if x.status >= 500 && x.status != 503 {
				r.fail("status %d for %s", x.status, x.id)
			}
		}
		if x.kind == "error" {
			r.Lost++
			if len(examples) < 3 {
				examples = append(examples, x.err)
			}
		}
	}
	p.logs.mu.Lock()
	missing := 0
	for id := range p.logs.answered {
		if strings.HasPrefix(id, "soak-") && !got[id] {
			missing++
		}
	}
	serverErrs := slices.Clone(p.logs.errors)
	p.logs.mu.Unlock()
	if r.Lost > 0 {
		r.fail("%d requests got no complete answer, e.g. %q", r.Lost, examples)
	}
	if missing > 0 {
		r.fail("%d answers thumbd logged never reached their client", missing)
	}
	for _, l := range serverErrs {
		if strings.Contains(l, "panic") {
			r.fail("thumbd panicked: %.300s", l)
			break
		}
	}
	if len(serverErrs) > 0 {
		// A crash's Go and C stacks are unparsed lines: keep them all.
		path := filepath.Join(os.TempDir(), fmt.Sprintf("thumbd-soak-%s-%s-%d.log", r.Mode, r.Malloc, p.pid))
		os.WriteFile(path, []byte(strings.Join(serverErrs, "\n")+"\n"), 0o644)
		r.note("%d error/unparsed log lines in %s, first: %.200s", len(serverErrs), path, serverErrs[0])
	}
}
