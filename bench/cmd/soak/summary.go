package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

func countFailures(rs []*result) int {
	n := 0
	for _, r := range rs {
		n += len(r.Failures)
	}
	return n
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func printSummary(w io.Writer, rs []*result) {
	fmt.Fprintln(w, "\n== soak summary ==")
	for _, r := range rs {
		keys := make([]string, 0, len(r.Statuses))
		for k := range r.Statuses {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var st []string
		for _, k := range keys {
			st = append(st, fmt.Sprintf("%s:%d", k, r.Statuses[k]))
		}
		verdict := "OK"
		if len(r.Failures) > 0 {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "\n[%s] %s malloc=%s clients=%d backoff-on-503=%v %.0fs\n", verdict, r.Mode, r.Malloc, r.Clients, r.Backoff, r.Seconds)
		fmt.Fprintf(w, "  requests %d  statuses %s  200/s %.1f\n", r.Requests, strings.Join(st, " "), r.RPS200)
		fmt.Fprintf(w, "  200 latency p50 %.0f ms  p99 %.0f ms  max %.0f ms (server max %.0f ms)  slowest answer %.0f ms\n", r.P50ms, r.P99ms, r.MaxMs, r.ServerMax200ms, r.MaxAnyMs)
		fmt.Fprintf(w, "  /health polls %d fails %d max %.0f ms\n", r.HealthPolls, r.HealthFails, r.HealthMaxMs)
		if r.PeakRSS > 0 {
			fmt.Fprintf(w, "  peak RSS %s (VmHWM %s)", mib(r.PeakRSS), mib(r.HWM))
			if r.RSSAfter > 0 {
				fmt.Fprintf(w, "  RSS 10 s after the load %s", mib(r.RSSAfter))
			}
			if r.CPUSeconds > 0 {
				fmt.Fprintf(w, "  server CPU %.0f s", r.CPUSeconds)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  lost %d  refused at connection level %d", r.Lost, r.Refused)
		if r.Mode == "shutdown" {
			fmt.Fprintf(w, "  exit code %d", r.ExitCode)
		}
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, "  note:", n)
		}
		for _, f := range r.Failures {
			fmt.Fprintln(w, "  FAIL:", f)
		}
	}
}
