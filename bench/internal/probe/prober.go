package probe

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/thumbd/thumbd/bench/internal/stats"
)

// The prober: liveness probes as a kubelet sends them, from a process of
// its own in a CPU cgroup of its own, never from the load generator's
// process. A goroutine of the driver would share its runtime and its CPU
// share with the load generator's hundreds of clients, and measure their
// scheduling rather than the server's answer (seen: p99 0.8 s in process
// against 6 ms from curl in the same run); on cgroup v1 every thread at the
// root weighs as much as a whole cgroup, so a prober beside a busy load
// generator waits behind its threads as a kubelet, in its own cgroup, does
// not. A kubelet's probe is a new connection each time, a GET within a
// timeout (1 s by default), then the next after a period.
//
// The driver starts `bench probe` (StartProber), waits for it to say it
// is up (a line "ready": a process's start takes a while, and the probes
// must cover the whole load), moves it into the cgroup, and only then
// lets it begin (a line on its stdin); it probes its URLs in
// turn, one at a time, every -every, until its stdin closes, writing a
// line per probe: the URL, the milliseconds to the answer's last byte and
// to the connection, and the status (0: failed).

// ChildEnv marks a process the driver started as a prober or a hello
// server: a test binary's TestMain calls Child, which then runs it.
const ChildEnv = "THUMBD_BENCH_CHILD"

// Child runs this process as the prober or the hello server and exits
// when the driver started it so (ChildEnv); otherwise it returns. A test
// binary that starts probers calls it first in TestMain; the driver's own
// binary runs them as its subcommands.
func Child() {
	if os.Getenv(ChildEnv) == "" || len(os.Args) < 2 {
		return
	}
	run := map[string]func(context.Context, []string, io.Writer, io.Writer) error{"probe": RunProber, "hello": RunHello}[os.Args[1]]
	if run == nil {
		return
	}
	if err := run(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunProber is `bench probe [-every 20ms] [-timeout 1s] [-wait] URL...`.
func RunProber(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	every := fs.Duration("every", 20*time.Millisecond, "start a probe this often (one at a time: a slow one delays the next)")
	timeout := fs.Duration("timeout", time.Second, "a probe that has no whole answer by then has failed")
	wait := fs.Bool("wait", false, "say \"ready\", begin at the first line on stdin, and stop when stdin ends (the driver's way)")
	n := fs.Int("n", 0, "stop after this many probes (0: when stdin ends, or never without -wait)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench probe [flags] URL...   (a line a probe: URL, ms to the last byte, ms to connect, status; 0 failed)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 || *every <= 0 || *timeout <= 0 {
		fs.Usage()
		return errors.New("want URLs, and -every and -timeout positive")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	if *wait {
		fmt.Fprintln(out, "ready")
		if err := out.Flush(); err != nil {
			return err
		}
		in := bufio.NewReader(os.Stdin)
		if _, err := in.ReadString('\n'); err != nil {
			return nil // the driver went before the start
		}
		go func() {
			_, _ = io.Copy(io.Discard, in)
			cancel()
		}()
	}
	client := &http.Client{Timeout: *timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for i := 0; *n == 0 || i < *n; i++ {
		u := fs.Arg(i % fs.NArg())
		total, connect, status := once(ctx, client, u)
		if ctx.Err() != nil {
			return nil // stopped during the probe: not a sample
		}
		fmt.Fprintf(out, "%s %.3f %.3f %d\n", u, total, connect, status)
		if err := out.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	return nil
}

// once sends one probe: milliseconds to the answer's last byte and to the
// connection, and the status (0: no whole answer in time).
func once(ctx context.Context, client *http.Client, u string) (total, connect float64, status int) {
	// ConnectDone runs on the transport's dialing goroutine, which can
	// outlive a probe that timed out: connected is shared with it (the race
	// detector stopped a prober with its exit status, 66, in a CI
	// rehearsal).
	var connected atomic.Int64 // ns since start; 0: not connected
	start := time.Now()
	trace := &httptrace.ClientTrace{ConnectDone: func(string, string, error) { connected.Store(int64(max(time.Since(start), 1))) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, u, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = client.Do(req); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil {
				status = resp.StatusCode
			}
		}
	}
	total = ms(time.Since(start))
	if c := connected.Load(); c != 0 {
		connect = ms(time.Duration(c))
	}
	return total, connect, status
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RunHello is `bench hello [-addr 127.0.0.1:PORT]`: the floor's server,
// net/http answering GET /health with thumbd's body and nothing else
// (bench/cmd/floor's), idle while the probes measure what the machine
// alone costs them.
func RunHello(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hello", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:"+os.Getenv("PORT"), "listen here (default: PORT on loopback)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	})
	srv := &http.Server{Addr: *addr, Handler: mux}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Sample is one probe as the prober saw it.
type Sample struct {
	URL     string
	Total   float64 // ms to the answer's last byte (to the failure, when failed)
	Connect float64 // ms to the connection
	Status  int     // 0: failed
}

// Samples are a prober's probes.
type Samples []Sample

// Summary is what a set of probes tells: how many, how many failed (no
// 200 within the timeout) and how many in a row at most, and the
// percentiles of the time to the answer's last byte over all of them (a
// failed one at the time it failed, so failures weigh in).
type Summary struct {
	N        int     `json:"n"`
	Failed   int     `json:"failed"`
	WorstRun int     `json:"failed_in_a_row"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
}

// Summary summarises s.
func (s Samples) Summary() Summary {
	var sum Summary
	var run int
	var times []float64
	for _, p := range s {
		sum.N++
		times = append(times, p.Total)
		if p.Status == http.StatusOK {
			run = 0
			continue
		}
		sum.Failed++
		run++
		sum.WorstRun = max(sum.WorstRun, run)
	}
	if len(times) == 0 {
		sum.P50, sum.P99, sum.Max = math.NaN(), math.NaN(), math.NaN()
		return sum
	}
	q := stats.Percentiles(times, 50, 99, 100)
	sum.P50, sum.P99, sum.Max = q[0], q[1], q[2]
	return sum
}

func (s Summary) String() string {
	return fmt.Sprintf("%d probes, %d failed (at most %d in a row), p50 %.1f ms, p99 %.1f ms, max %.1f ms", s.N, s.Failed, s.WorstRun, s.P50, s.P99, s.Max)
}

// Prober is a running `bench probe`.
type Prober struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	samples chan Samples
	Cgroup  string // the CPU cgroup it runs in; "" when it could not be moved into one
}

// ProberSpec says what a prober probes, how often, and from where.
type ProberSpec struct {
	Self    []string // the bench binary (and arguments before the subcommand); nil: this executable
	URLs    []string
	Every   time.Duration
	Timeout time.Duration
	// Cgroup is the CPU cgroup directory it is moved into, made if
	// missing ("": none); a prober that cannot be moved runs all the
	// same, and Prober.Cgroup says so.
	Cgroup string
}

// StartProber starts a prober, moves it into its cgroup, then lets it
// begin. Stop ends it.
func StartProber(spec ProberSpec) (*Prober, error) {
	self := spec.Self
	if self == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		self = []string{exe}
	}
	args := append(slices.Clone(self[1:]), "probe", "-wait", "-every", spec.Every.String(), "-timeout", spec.Timeout.String())
	cmd := exec.Command(self[0], append(args, spec.URLs...)...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Prober{cmd: cmd, stdin: stdin, samples: make(chan Samples, 1)}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); line != "ready\n" {
		p.Stop()
		return nil, fmt.Errorf("prober: said %q, %v; want ready", line, err)
	}
	go func() { p.samples <- readSamples(out) }()
	if spec.Cgroup != "" && JoinCgroup(spec.Cgroup, cmd.Process.Pid) == nil {
		p.Cgroup = spec.Cgroup
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		p.Stop()
		return nil, fmt.Errorf("prober: %w", err)
	}
	return p, nil
}

// Stop ends the prober (the probe in flight is not a sample) and returns
// its probes.
func (p *Prober) Stop() (Samples, error) {
	p.stdin.Close()
	s := <-p.samples
	if err := p.cmd.Wait(); err != nil {
		return s, fmt.Errorf("prober: %w", err)
	}
	return s, nil
}

func readSamples(r io.Reader) Samples {
	var s Samples
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		total, err1 := strconv.ParseFloat(f[1], 64)
		connect, err2 := strconv.ParseFloat(f[2], 64)
		status, err3 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil && err3 == nil {
			s = append(s, Sample{URL: f[0], Total: total, Connect: connect, Status: status})
		}
	}
	return s
}

// DefaultCgroup is the CPU cgroup the probers run in, as a kubelet runs
// in its own service's: thumbd-probe under cgroup v1's cpu controller, or
// at the root of cgroup v2's unified tree; "" when neither is mounted.
func DefaultCgroup() string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return "/sys/fs/cgroup/thumbd-probe"
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cgroup.procs"); err == nil {
		return "/sys/fs/cgroup/cpu/thumbd-probe"
	}
	return ""
}

// JoinCgroup moves process pid into the cgroup directory dir, made if
// missing.
func JoinCgroup(dir string, pid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}

// StartHello starts `bench hello` on a free loopback port: the floor's
// idle server. Its URL is the base to probe; stop is its end.
func StartHello(self []string) (url string, stop func(), err error) {
	if self == nil {
		exe, err := os.Executable()
		if err != nil {
			return "", nil, err
		}
		self = []string{exe}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(self[0], append(slices.Clone(self[1:]), "hello", "-addr", addr)...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	url = "http://" + addr
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if status, _, err := Get(context.Background(), http.DefaultClient, url+"/health"); err == nil && status == http.StatusOK {
			return url, stop, nil
		}
		if time.Now().After(end) {
			stop()
			return "", nil, errors.New("the hello server did not answer within 10 s")
		}
	}
}
