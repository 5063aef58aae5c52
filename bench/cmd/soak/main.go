// Command soak saturates a thumbd process on loopback and checks that it
// degrades gracefully: no crash, no 5xx but deliberate 503s with
// Retry-After, /health answering throughout, every admitted thumbnail
// answered within its deadline, peak RSS under a bound; SIGTERM under load
// loses no admitted request and exits 0; a thousand slow or idle
// connections do not stop /health or /thumbnail. Each mode starts its own
// thumbd (the binary given) with default settings on a free port.
//
//	go build -o bin/thumbd ./service
//	flock /tmp/thumbd-bench.lock go run ./bench/cmd/soak -bin bin/thumbd          # every mode (scripts/soak.sh)
//	go run ./bench/cmd/soak -modes load -malloc jemalloc -duration 60s -clients 500
//
// Everything is bounded: the load runs for -duration with -clients
// workers, each request has a client timeout, each mode has a hard stop.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/bench/internal/procmem"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type options struct {
	bin        string
	modes      []string
	mallocs    []string
	clients    int
	duration   time.Duration
	termAfter  time.Duration
	slowConns  int
	slowBodies int
	slowFor    time.Duration
	sources    []string
	query      string
	deadline   time.Duration
	rssBound   int64
	backoff    bool
	jsonOut    string
	env        []string
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var o options
	var modes, mallocs, sources, env string
	var rssMB int64
	fs.StringVar(&o.bin, "bin", "bin/thumbd", "thumbd binary to run")
	fs.StringVar(&modes, "modes", "load,shutdown,slowloris", "modes to run: load, shutdown, slowloris")
	fs.StringVar(&mallocs, "malloc", "glibc,arena2,jemalloc", "allocators for the load mode: glibc, arena2 (MALLOC_ARENA_MAX=2), jemalloc (LD_PRELOAD)")
	fs.IntVar(&o.clients, "clients", 500, "concurrent clients on POST /thumbnail")
	fs.DurationVar(&o.duration, "duration", 60*time.Second, "load duration")
	fs.DurationVar(&o.termAfter, "term-after", 15*time.Second, "shutdown mode: SIGTERM after this much load")
	fs.IntVar(&o.slowConns, "slow-conns", 1000, "slowloris mode: slow or idle connections")
	fs.IntVar(&o.slowBodies, "slow-bodies", 100, "slowloris mode: of those, POST /thumbnail bodies sent a byte a second (more than the 34 admission places)")
	fs.DurationVar(&o.slowFor, "slow-for", 20*time.Second, "slowloris mode: duration")
	fs.StringVar(&sources, "sources", "service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/small.jpg,service/internal/thumb/testdata/sources/large.jpg", "source images, cycled")
	fs.StringVar(&o.query, "query", "w=256&h=256", "thumbnail query")
	fs.DurationVar(&o.deadline, "deadline", 10*time.Second, "THUMBD_DEADLINE of the service (its default)")
	fs.BoolVar(&o.backoff, "backoff", true, "after a 503, a client waits a random time up to its Retry-After (false: retry at once)")
	fs.Int64Var(&rssMB, "rss-bound-mb", 600, "peak RSS bound for default settings, MiB")
	fs.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	fs.StringVar(&env, "env", "", "extra environment for thumbd, comma-separated K=V")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.modes, o.mallocs, o.sources = split(modes), split(mallocs), split(sources)
	o.rssBound = rssMB << 20
	if env != "" {
		o.env = split(env)
	}
	var srcs [][]byte
	for _, s := range o.sources {
		b, err := os.ReadFile(s)
		if err != nil {
			return err
		}
		srcs = append(srcs, b)
	}
	var results []*result
	for _, mode := range o.modes {
		switch mode {
		case "load":
			for _, m := range o.mallocs {
				r, err := loadMode(o, srcs, m)
				if err != nil {
					return err
				}
				results = append(results, r)
			}
		case "shutdown":
			r, err := shutdownMode(o, srcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		case "slowloris":
			r, err := slowlorisMode(o, srcs)
			if err != nil {
				return err
			}
			results = append(results, r)
		default:
			return fmt.Errorf("unknown mode %q", mode)
		}
	}
	printSummary(stdout, results)
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	for _, r := range results {
		if len(r.Failures) > 0 {
			return fmt.Errorf("%d check(s) failed", countFailures(results))
		}
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

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
	Notes           []string       `json:"notes"`
	Failures        []string       `json:"failures"`
}

func (r *result) fail(format string, a ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, a...))
}
func (r *result) note(format string, a ...any) { r.Notes = append(r.Notes, fmt.Sprintf(format, a...)) }

// proc is a running thumbd.
type proc struct {
	cmd    *exec.Cmd
	base   string
	logs   *serverLog
	exited chan struct{}
	code   int
}

// serverLog keeps what thumbd logged per request (debug level logs every
// request with its ID and status) and its error lines.
type serverLog struct {
	mu       sync.Mutex
	answered map[string]int // request ID -> status
	durMax   map[int]float64
	errors   []string
}

func startThumbd(o options, malloc string, extra ...string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(o.bin)
	env := append(os.Environ(), "PORT="+strconv.Itoa(port), "THUMBD_LOG_LEVEL=debug")
	switch malloc {
	case "", "glibc":
	case "arena2":
		env = append(env, "MALLOC_ARENA_MAX=2")
	case "jemalloc":
		lib := "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
		if _, err := os.Stat(lib); err != nil {
			return nil, fmt.Errorf("jemalloc: %v (apt-get install libjemalloc2)", err)
		}
		env = append(env, "LD_PRELOAD="+lib)
	default:
		return nil, fmt.Errorf("unknown allocator %q", malloc)
	}
	cmd.Env = append(append(env, o.env...), extra...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, base: "http://127.0.0.1:" + strconv.Itoa(port), exited: make(chan struct{}),
		logs: &serverLog{answered: map[string]int{}, durMax: map[int]float64{}}}
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.logs.add(sc.Bytes())
		}
	}()
	go func() {
		<-logsDone
		err := cmd.Wait()
		p.code = 0
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(p.base + "/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p, nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	return nil, errors.New("thumbd never became ready")
}

func (l *serverLog) add(line []byte) {
	var rec struct {
		Level      string  `json:"level"`
		Msg        string  `json:"msg"`
		RequestID  string  `json:"request_id"`
		Status     int     `json:"status"`
		Path       string  `json:"path"`
		DurationMs float64 `json:"duration_ms"`
	}
	if json.Unmarshal(line, &rec) != nil {
		l.mu.Lock()
		l.errors = append(l.errors, string(line))
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec.Msg == "request" && rec.Path == "/thumbnail" {
		l.answered[rec.RequestID] = rec.Status
		l.durMax[rec.Status] = max(l.durMax[rec.Status], rec.DurationMs)
	}
	if (rec.Level == "ERROR" || rec.Level == "WARN") && rec.Msg != "request" {
		l.errors = append(l.errors, string(line))
	}
}

// stop ends the process if it still runs (SIGKILL after SIGTERM and 40 s).
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(40 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// outcome is one client request.
type outcome struct {
	id         string
	status     int
	latency    time.Duration
	kind       string // "answer", "refused" (connection level), "error"
	err        string
	sentAt     time.Time
	complete   bool
	retryAfter time.Duration
}

type recorder struct {
	mu  sync.Mutex
	all []outcome
}

func (r *recorder) add(o outcome) { r.mu.Lock(); r.all = append(r.all, o); r.mu.Unlock() }

// loadClients runs n workers posting thumbnails until ctx is done; each
// finishes the request it has in flight.
func loadClients(ctx context.Context, base, query string, n int, srcs [][]byte, timeout time.Duration, backoff bool, rec *recorder) *sync.WaitGroup {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext}
	client := &http.Client{Transport: tr, Timeout: timeout}
	var wg sync.WaitGroup
	var seq atomic.Int64
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				src := srcs[(w+i)%len(srcs)]
				id := fmt.Sprintf("soak-%d", seq.Add(1))
				x := postOnce(client, base+"/thumbnail?"+query, id, src)
				rec.add(x)
				if backoff && x.status == 503 {
					select {
					case <-ctx.Done():
					case <-time.After(time.Duration(rand.Int64N(int64(x.retryAfter) + 1))):
					}
				}
			}
		}(w)
	}
	return &wg
}

func postOnce(client *http.Client, url, id string, src []byte) outcome {
	req, _ := http.NewRequest("POST", url, bytes.NewReader(src))
	req.Header.Set("X-Request-Id", id)
	req.Header.Set("Content-Type", "application/octet-stream")
	o := outcome{id: id, sentAt: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		o.latency = time.Since(o.sentAt)
		o.kind, o.err = classify(err), err.Error()
		return o
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	o.latency = time.Since(o.sentAt)
	o.status = resp.StatusCode
	if err != nil {
		o.kind, o.err = "error", "body: "+err.Error()
		return o
	}
	o.kind = "answer"
	switch {
	case resp.StatusCode == 200:
		o.complete = strconv.Itoa(len(body)) == resp.Header.Get("Content-Length") && hasMagic(body, resp.Header.Get("Content-Type"))
	case resp.StatusCode == 503:
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		o.complete = err == nil && secs >= 0 && json.Valid(body)
		o.retryAfter = time.Duration(secs) * time.Second
	default:
		o.complete = json.Valid(body)
	}
	if !o.complete {
		o.kind, o.err = "error", fmt.Sprintf("incomplete %d answer (%d bytes)", resp.StatusCode, len(body))
	}
	return o
}

// hasMagic checks an image starts as its Content-Type says.
func hasMagic(b []byte, contentType string) bool {
	switch contentType {
	case "image/png":
		return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF})
	case "image/webp":
		return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}
	return false
}

// classify tells connection-level refusals (nothing was admitted: the
// dial was refused, or the server closed an idle keep-alive connection
// before reading the request) from lost answers.
func classify(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return "refused"
	}
	s := err.Error()
	if strings.Contains(s, "server closed idle connection") {
		return "refused"
	}
	return "error"
}

// healthPoller polls /health every 100 ms with a 2 s timeout.
type healthPoller struct {
	polls, fails atomic.Int64
	maxNs        atomic.Int64
	firstFail    atomic.Value
}

func pollHealth(ctx context.Context, base string, h *healthPoller) *sync.WaitGroup {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for ctx.Err() == nil {
			start := time.Now()
			resp, err := client.Get(base + "/health")
			el := time.Since(start)
			h.polls.Add(1)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				h.fails.Add(1)
				h.firstFail.CompareAndSwap(nil, fmt.Sprint(err))
			}
			for {
				old := h.maxNs.Load()
				if int64(el) <= old || h.maxNs.CompareAndSwap(old, int64(el)) {
					break
				}
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	return &wg
}

// rssSampler keeps the peak VmRSS and the last VmHWM of pid.
type rssSampler struct {
	peak, hwm atomic.Int64
}

func sampleRSS(ctx context.Context, pid int, s *rssSampler) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if st, err := procmem.Read(pid); err == nil {
				if st.VmRSS > s.peak.Load() {
					s.peak.Store(st.VmRSS)
				}
				s.hwm.Store(st.VmHWM)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return &wg
}

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
		path := filepath.Join(os.TempDir(), fmt.Sprintf("thumbd-soak-%s-%s-%d.log", r.Mode, r.Malloc, p.cmd.Process.Pid))
		os.WriteFile(path, []byte(strings.Join(serverErrs, "\n")+"\n"), 0o644)
		r.note("%d error/unparsed log lines in %s, first: %.200s", len(serverErrs), path, serverErrs[0])
	}
}

func loadMode(o options, srcs [][]byte, malloc string) (*result, error) {
	p, err := startThumbd(o, malloc)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "load", Malloc: malloc, Clients: o.clients, Backoff: o.backoff}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	bg, bgCancel := context.WithCancel(context.Background())
	defer bgCancel()
	rss := &rssSampler{}
	rssWG := sampleRSS(bg, p.cmd.Process.Pid, rss)
	health := &healthPoller{}
	hWG := pollHealth(ctx, p.base, health)
	cpu0, _ := procmem.CPUTime(p.cmd.Process.Pid)
	rec := &recorder{}
	start := time.Now()
	wg := loadClients(ctx, p.base, o.query, o.clients, srcs, o.deadline+30*time.Second, o.backoff, rec)
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	hWG.Wait()
	cpu1, _ := procmem.CPUTime(p.cmd.Process.Pid)
	r.CPUSeconds = (cpu1 - cpu0).Seconds()
	// RSS after the soak: what the allocator keeps once the load is gone.
	time.Sleep(10 * time.Second)
	if st, err := procmem.Read(p.cmd.Process.Pid); err == nil {
		r.RSSAfter = st.VmRSS
	}
	bgCancel()
	rssWG.Wait()
	r.PeakRSS, r.HWM = rss.peak.Load(), rss.hwm.Load()
	r.HealthPolls, r.HealthFails = int(health.polls.Load()), int(health.fails.Load())
	r.HealthMaxMs = float64(time.Duration(health.maxNs.Load()).Microseconds()) / 1000
	select {
	case <-p.exited:
		r.fail("thumbd exited during the load (code %d)", p.code)
	default:
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, false)
	for _, x := range rec.all {
		if x.kind == "refused" {
			r.fail("a connection was refused during the load: %s", x.err)
			break
		}
	}
	if r.HealthFails > 0 {
		r.fail("/health failed %d of %d polls (first: %v)", r.HealthFails, r.HealthPolls, health.firstFail.Load())
	}
	if r.Over200Deadline > 0 {
		r.fail("%d thumbnails answered 200 after the %s deadline (client-side)", r.Over200Deadline, o.deadline)
	}
	if r.ServerMax200ms > float64(o.deadline.Milliseconds()) {
		r.fail("thumbd answered a 200 after %.0f ms, deadline %s", r.ServerMax200ms, o.deadline)
	}
	if r.PeakRSS > o.rssBound {
		r.fail("peak RSS %d MiB over the %d MiB bound", r.PeakRSS>>20, o.rssBound>>20)
	}
	if r.Statuses["200"] == 0 {
		r.fail("no thumbnail succeeded")
	}
	return r, nil
}

func shutdownMode(o options, srcs [][]byte) (*result, error) {
	p, err := startThumbd(o, "")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "shutdown", Malloc: "glibc", Clients: o.clients, Backoff: o.backoff}
	// The workers run until the process has exited and a second more, so
	// requests keep arriving after the listener closed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	start := time.Now()
	wg := loadClients(ctx, p.base, o.query, o.clients, srcs, o.deadline+40*time.Second, o.backoff, rec)
	time.Sleep(o.termAfter)
	termAt := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(60 * time.Second):
		r.fail("thumbd did not exit within 60 s of SIGTERM")
		p.cmd.Process.Kill()
		<-p.exited
	}
	exitAt := time.Now()
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.ExitCode = p.code
	if p.code != 0 {
		r.fail("exit code %d", p.code)
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, true)
	var afterTerm200, afterTermAnswers, afterExitAnswers int
	for _, x := range rec.all {
		done := x.sentAt.Add(x.latency)
		if x.kind == "answer" && done.After(termAt) {
			afterTermAnswers++
			if x.status == 200 {
				afterTerm200++
			}
		}
		if x.kind == "answer" && x.sentAt.After(exitAt) {
			afterExitAnswers++
		}
	}
	r.note("SIGTERM after %s; exited %.0f ms later; %d answers (%d thumbnails) completed after SIGTERM; %d requests refused at connection level",
		o.termAfter, float64(exitAt.Sub(termAt).Milliseconds()), afterTermAnswers, afterTerm200, r.Refused)
	if afterExitAnswers > 0 {
		r.fail("%d requests sent after exit were answered", afterExitAnswers)
	}
	if afterTerm200 == 0 {
		r.fail("no admitted thumbnail completed after SIGTERM: the test proved nothing")
	}
	return r, nil
}

func slowlorisMode(o options, srcs [][]byte) (*result, error) {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(2*o.slowConns+200) {
		return nil, fmt.Errorf("ulimit -n is %d, the slowloris mode needs %d", lim.Cur, 2*o.slowConns+200)
	}
	p, err := startThumbd(o, "")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	r := &result{Mode: "slowloris", Malloc: "glibc", Clients: o.slowConns}
	ctx, cancel := context.WithTimeout(context.Background(), o.slowFor)
	defer cancel()
	addr := strings.TrimPrefix(p.base, "http://")
	var open, reopened atomic.Int64
	var wg sync.WaitGroup
	// Three kinds: headers sent a byte at a time (reconnecting when the
	// server's header timeout closes them), idle keep-alives after one
	// request, and POST /thumbnail bodies sent a byte a second.
	for i := 0; i < o.slowConns; i++ {
		kind := "headers"
		switch {
		case i < o.slowBodies:
			kind = "body"
		case i%2 == 1:
			kind = "idle"
		}
		wg.Add(1)
		go func(kind string) {
			defer wg.Done()
			slowConn(ctx, addr, kind, &open, &reopened)
		}(kind)
		if i%100 == 99 {
			time.Sleep(20 * time.Millisecond) // do not overflow the accept backlog
		}
	}
	time.Sleep(2 * time.Second) // let them settle
	r.note("%d slow connections open after 2 s (%d slow bodies)", open.Load(), o.slowBodies)
	health := &healthPoller{}
	hWG := pollHealth(ctx, p.base, health)
	rec := &recorder{}
	client := &http.Client{Timeout: 2 * o.deadline}
	start := time.Now()
	for ctx.Err() == nil {
		for _, src := range srcs {
			rec.add(postOnce(client, p.base+"/thumbnail?"+o.query, fmt.Sprintf("soak-slow-%d", len(rec.all)), src))
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.Seconds = time.Since(start).Seconds()
	hWG.Wait()
	cancel()
	wg.Wait()
	r.note("%d slow connections re-opened after the server closed them", reopened.Load())
	r.HealthPolls, r.HealthFails = int(health.polls.Load()), int(health.fails.Load())
	r.HealthMaxMs = float64(time.Duration(health.maxNs.Load()).Microseconds()) / 1000
	if st, err := procmem.Read(p.cmd.Process.Pid); err == nil {
		r.PeakRSS, r.HWM = st.VmHWM, st.VmHWM
	}
	summarise(r, rec, o, p)
	checkAnswers(r, rec, p, false)
	if r.HealthFails > 0 {
		r.fail("/health failed %d of %d polls under slowloris", r.HealthFails, r.HealthPolls)
	}
	if r.Statuses["200"] == 0 || r.Statuses["200"] < r.Requests*9/10 {
		r.fail("only %d of %d thumbnails succeeded under slowloris", r.Statuses["200"], r.Requests)
	}
	return r, nil
}

// slowConn holds one slow connection until ctx is done, reconnecting when
// the server closes it.
func slowConn(ctx context.Context, addr, kind string, open, reopened *atomic.Int64) {
	first := true
	for ctx.Err() == nil {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if first {
			open.Add(1)
			first = false
		} else {
			reopened.Add(1)
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		switch kind {
		case "idle":
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
			buf := make([]byte, 4096)
			c.Read(buf) // the answer
			c.Read(buf) // then wait, idle, until the server or ctx closes it
		case "headers":
			req := "GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200) + "\r\n\r\n"
			for i := 0; i < len(req) && ctx.Err() == nil; i++ {
				if _, err := c.Write([]byte{req[i]}); err != nil {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		case "body":
			fmt.Fprintf(c, "POST /thumbnail HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n\xff\xd8\xff")
			for ctx.Err() == nil {
				if _, err := c.Write([]byte{0}); err != nil {
					break
				}
				time.Sleep(time.Second)
			}
		}
		stop()
		c.Close()
	}
}

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
