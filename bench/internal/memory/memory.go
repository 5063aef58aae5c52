// Package memory is `bench memory`: the memory of one thumbd under
// thumbnail load. It starts the server (a hardened container with the
// Kubernetes manifests' limits, or a process), reads its idle VmRSS, loads
// POST /thumbnail with the bench's load generator for a time or a count,
// then reports the peak VmRSS seen, VmHWM, the container's cgroup peak and
// whether it was OOM-killed, the glibc malloc arenas besides the main one
// (whether MALLOC_ARENA_MAX reaches thumbd's malloc), and the answers by
// status. It holds the bench lock while it measures.
//
//	bench memory -image thumbd:scratch -env THUMBD_CONCURRENCY=2 -env THUMBD_QUEUE=8 -source photo12.jpg
//	bench memory -clients 16 -requests 200 -env MALLOC_ARENA_MAX=2 -- bin/thumbd-static
package memory

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
)

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tf target.Flags
	tf.Register(fs, "a container image, run hardened with -cpus and -memory (else: the command after --)")
	cpus := fs.String("cpus", "2", "container --cpus")
	mems := fs.String("memory", "1280m", "container --memory, or a comma-separated list run one after another (\"none\": no limit)")
	srcs := fs.String("source", "bench/results/tmp/sources/large.jpg", "image to POST, or a comma-separated list loaded one after another on the same server (a known source's name is made when missing)")
	query := fs.String("query", "w=256&h=256", "thumbnail query")
	clients := fs.Int("clients", 10, "concurrent clients")
	duration := fs.Duration("duration", 15*time.Second, "load duration per source (the bound in time)")
	requests := fs.Int("requests", 0, "requests in all per source (the bound in count; 0: the load generator's own)")
	probe := fs.Duration("probe", 250*time.Millisecond, "GET /health this often during the load, 1 s timeout each, as a liveness probe (0: none)")
	after := fs.Duration("after", 0, "then wait this long idle and read the resident memory again (0: don't)")
	admin := fs.Bool("admin", false, "start thumbd with THUMBD_ADMIN_PORT on a free port and probe /health there, as the manifests' probes do")
	check := fs.Bool("check", false, "fail unless: not OOM-killed, never 3 failed probes in a row, no request lost (every accepted request answered), some 2xx for every source")
	var lock string
	benchlock.Flag(fs, &lock)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench memory [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := tf.Parsed(fs); err != nil {
		fs.Usage()
		return err
	}
	if *clients < 1 || *duration <= 0 || *requests < 0 || *probe < 0 || *after < 0 {
		fs.Usage()
		return errors.New("-clients and -duration positive")
	}
	var bodies [][]byte
	names := strings.Split(*srcs, ",")
	for _, src := range names {
		body, err := sources.Read(src)
		if err != nil {
			return err
		}
		bodies = append(bodies, body)
	}
	release, err := benchlock.Hold(ctx, lock, stderr)
	if err != nil {
		return err
	}
	defer release()
	var failed []string
	for _, mem := range strings.Split(*mems, ",") {
		spec := tf.Spec("host", target.Hardened(*cpus, mem), nil)
		spec.Stdout, spec.Stderr = stderr, stderr // a process's output
		name := tf.Name()
		if tf.Image != "" {
			name += " --memory " + mem
		}
		r := run{name: name, query: *query, clients: *clients, duration: *duration, requests: *requests, probe: *probe, after: *after, admin: *admin}
		fails, err := r.measure(ctx, spec, names, bodies, stdout)
		if err != nil {
			return err
		}
		for _, f := range fails {
			failed = append(failed, name+": "+f)
		}
	}
	if *check && len(failed) > 0 {
		return fmt.Errorf("memory check failed:\n  %s", strings.Join(failed, "\n  "))
	}
	return nil
}

// run is one server's measurement: its sources loaded one after another.
type run struct {
	name, query            string
	clients, requests      int
	duration, probe, after time.Duration
	admin                  bool // probe the admin port (THUMBD_ADMIN_PORT)
}

// measure starts the server, loads it with each source in turn while a
// liveness probe runs, reports, and returns what a -check would fail on.
func (r run) measure(ctx context.Context, spec launch.Spec, names []string, bodies [][]byte, stdout io.Writer) ([]string, error) {
	srv, adminURL, pid, err := target.StartReady(ctx, spec, r.admin)
	if err != nil {
		return nil, err
	}
	defer srv.Stop(5 * time.Second)
	probeURL := srv.URL() + "/health"
	if adminURL != "" {
		probeURL = adminURL + "/health"
	}
	idle, err := procfs.Read(pid)
	if err != nil {
		return nil, err
	}
	stopProbe := make(chan struct{})
	probed := make(chan probeResult, 1)
	go func() { probed <- probeHealth(probeURL, r.probe, stopProbe) }()
	var fails []string
	var peakRSS int64
	for i, body := range bodies {
		o, err := load.Run(load.Step{
			Request:     load.Request{Method: "POST", URL: srv.URL() + "/thumbnail?" + r.query, Body: body, ContentType: "application/octet-stream"},
			Concurrency: r.clients, Duration: r.duration, MaxRequests: r.requests, ServerPID: pid,
		})
		if err != nil {
			close(stopProbe)
			return nil, err
		}
		peakRSS = max(peakRSS, o.ServerPeakRSS)
		fmt.Fprintf(stdout, "%s %s %s, %d clients: %.1f thumbnails/s; answers: %s\n",
			r.name, filepath.Base(names[i]), bound(o, r.requests), r.clients, o.RPS, Answers(o))
		if o.OK == 0 {
			fails = append(fails, filepath.Base(names[i])+": no thumbnail")
		}
		if lost, _ := TransportErrors(o); lost > 0 {
			fails = append(fails, fmt.Sprintf("%s: %d requests got no answer", filepath.Base(names[i]), lost))
		}
	}
	close(stopProbe)
	pr := <-probed
	died := srv.Exited()
	summary := fmt.Sprintf("%s: idle VmRSS %s, peak VmRSS %s", r.name, mib(idle.VmRSS), mib(peakRSS))
	if srv.Cmd == nil {
		oom := inspect(ctx, srv, "{{.State.OOMKilled}}")
		summary += fmt.Sprintf(", cgroup peak %s, OOMKilled %s", cgroupPeak(ctx, srv), oom)
		if oom == "true" {
			fails = append(fails, "OOM-killed")
		}
	}
	if died != nil {
		fails = append(fails, "the server died: "+died.Error())
	}
	summary += "; " + pr.String()
	if adminURL != "" {
		summary += " on the admin port"
	}
	if pr.worstRun >= 3 {
		fails = append(fails, fmt.Sprintf("%d failed liveness probes in a row", pr.worstRun))
	}
	if died == nil {
		if arenas, err := procfs.Arenas(pid); err == nil {
			summary += fmt.Sprintf("; %d glibc arenas besides the main one", arenas)
		}
		if r.after > 0 {
			time.Sleep(r.after)
			if m, err := procfs.Read(pid); err == nil {
				// Anonymous memory apart: file-backed pages are the binary's
				// code the load touched (the codecs), page cache the kernel
				// takes back under pressure, not memory thumbd holds.
				summary += fmt.Sprintf("; VmRSS %s after %s idle (%.2fx idle), RssAnon %s (%.2fx its idle %s)",
					mib(m.VmRSS), r.after, float64(m.VmRSS)/float64(idle.VmRSS), mib(m.RssAnon), float64(m.RssAnon)/float64(max(idle.RssAnon, 1)), mib(idle.RssAnon))
			}
		}
	}
	fmt.Fprintln(stdout, summary)
	return fails, nil
}

// TransportErrors counts the requests that got no HTTP answer: lost ones,
// and those whose upload the server refused unread. thumbd closes a
// connection without reading its body only after a refusal's 503 (every
// admitted request is read whole and answered), and closing with unread
// bytes makes the kernel send a reset, which can discard the 503 before
// the client reads it: the client then sees a failed write, or EOF or a
// reset on a read. And at its cap on open connections (THUMBD_MAX_CONNECTIONS)
// thumbd closes keep-alive connections idle past a second: a client that
// sends on one as it closes gets "server closed idle connection", its
// request never read (as bench/cmd/soak classifies it). Those are
// refusals, not requests the server accepted; a server that died instead
// is caught apart (srv.Exited, OOMKilled).
func TransportErrors(o load.Outcome) (lost, refusedUnread int) {
	for msg, c := range o.Errors {
		if strings.Contains(msg, "write: broken pipe") || strings.Contains(msg, "write: connection reset") ||
			strings.HasSuffix(msg, ": EOF") || strings.HasSuffix(msg, "read: connection reset by peer") ||
			(strings.Contains(msg, "write tcp") && strings.Contains(msg, "use of closed network connection")) ||
			strings.Contains(msg, "server closed idle connection") {
			refusedUnread += c
			continue
		}
		lost += c
	}
	return lost, refusedUnread
}

// probeResult is what the liveness probe saw.
type probeResult struct {
	probes, failed, worstRun int
	latencies                []float64 // ms, answered probes
	inProcess                bool      // no curl: probed from this process
}

func (p probeResult) String() string {
	if p.probes == 0 {
		return "no /health probe"
	}
	sort.Float64s(p.latencies)
	q := func(f float64) float64 {
		if len(p.latencies) == 0 {
			return 0
		}
		return p.latencies[min(int(f*float64(len(p.latencies))), len(p.latencies)-1)]
	}
	how := "curl"
	if p.inProcess {
		how = "in process, beside the load generator"
	}
	return fmt.Sprintf("/health (%s) %d probes, %d failed (at most %d in a row), p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		how, p.probes, p.failed, p.worstRun, q(0.5), q(0.99), q(1))
}

// probeHealth GETs url every interval (1 s timeout, a fresh connection each
// time, as a kubelet's probe) until stop is closed. Each probe is a curl
// process, as a kubelet is a process of its own: a goroutine here would
// share this driver's runtime with the load generator's hundreds of
// clients and measure their scheduling, not the server's answer (seen:
// p99 0.8 s in process against 6 ms from curl, the same run). Without curl
// the probes run in this process, and the report says so.
func probeHealth(url string, interval time.Duration, stop <-chan struct{}) probeResult {
	var p probeResult
	if interval == 0 {
		<-stop
		return p
	}
	curl, _ := exec.LookPath("curl")
	p.inProcess = curl == ""
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	run := 0
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return p
		case <-t.C:
		}
		var ms float64
		var ok bool
		if curl != "" {
			out, _ := exec.Command(curl, "-s", "-o", "/dev/null", "-m", "1", "-w", "%{http_code} %{time_total}", url).Output()
			var code int
			var secs float64
			_, err := fmt.Sscan(string(out), &code, &secs)
			ok, ms = err == nil && code == http.StatusOK, secs*1000
		} else {
			start := time.Now()
			resp, err := client.Get(url)
			ok = err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			ms = float64(time.Since(start).Microseconds()) / 1000
		}
		p.probes++
		if ok {
			p.latencies = append(p.latencies, ms)
			run = 0
			continue
		}
		p.failed++
		run++
		p.worstRun = max(p.worstRun, run)
	}
}
func bound(o load.Outcome, requests int) string {
	if requests > 0 {
		return fmt.Sprintf("%d requests in %.1f s", o.Requests, o.Wall)
	}
	return fmt.Sprintf("%.0f s", o.Wall)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func inspect(ctx context.Context, srv *launch.Server, format string) string {
	v, err := srv.Inspect(ctx, format)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return v
}

// cgroupPeak reads the container's peak memory from its cgroup (v1's
// max_usage_in_bytes or v2's memory.peak, which needs Linux 5.19).
func cgroupPeak(ctx context.Context, srv *launch.Server) string {
	id, err := srv.Inspect(ctx, "{{.Id}}")
	if err != nil {
		return "unknown"
	}
	for _, p := range []string{
		"/sys/fs/cgroup/memory/docker/" + id + "/memory.max_usage_in_bytes",
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/memory.peak",
	} {
		var n int64
		if b, err := os.ReadFile(p); err == nil {
			if _, err := fmt.Sscan(string(b), &n); err == nil {
				return mib(n)
			}
		}
	}
	return "unknown (no cgroup memory peak file)"
}

// Answers lists the answers by status, then the transport errors.
func Answers(o load.Outcome) string {
	parts := []string{fmt.Sprintf("%d x 2xx", o.OK)}
	var codes []string
	for c := range o.Non2xx {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d x %s", o.Non2xx[c], c))
	}
	lost, unread := TransportErrors(o)
	if unread > 0 {
		parts = append(parts, fmt.Sprintf("%d refused unread (the 503 reset away: a failed write, EOF or reset)", unread))
	}
	if lost > 0 {
		for msg, n := range o.Errors {
			if !strings.Contains(msg, "write") && !strings.HasSuffix(msg, ": EOF") && !strings.HasSuffix(msg, "connection reset by peer") {
				parts = append(parts, fmt.Sprintf("%d x error %q", n, msg))
			}
		}
	}
	return strings.Join(parts, ", ")
}
