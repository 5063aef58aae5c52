package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/thumbd/thumbd/service/internal/engines"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/thumbd/thumbd/internal/hostile"
	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/internal/procfs"
	"github.com/thumbd/thumbd/service/internal/apierr"
	"github.com/thumbd/thumbd/service/internal/cell"
	"github.com/thumbd/thumbd/service/internal/cellpool"
	"github.com/thumbd/thumbd/service/internal/celltest"
	"github.com/thumbd/thumbd/service/internal/imagefmt"
	"github.com/thumbd/thumbd/service/internal/memcost"
	"github.com/thumbd/thumbd/service/internal/sandbox"
	"github.com/thumbd/thumbd/service/internal/thumbjob"
	"github.com/thumbd/thumbd/service/internal/tracing"
)

// faultEnv makes a cell started from this test binary (see TestMain) wrap
// its engine in faultEngine: "1" for the faults below, "die" to exit before
// saying hello.
const faultEnv = "THUMBD_TEST_CELL_FAULTS"

// Widths faultEngine reads as orders, run inside a real, sandboxed cell.
const (
	wOpen     = 4001 // open a file
	wSocket   = 4002 // create a socket
	wExec     = 4003 // exec a program
	wSegfault = 4004 // write through a nil pointer
	wHang     = 4005 // never finish
)

// cellFaults is the fault order of a cell started from this test binary:
// its own faultEnv (set by tests that build the pool), or else its
// supervisor's (a thumbd child process; a cell's environment is cut down
// to the runtime's variables, so the order is read from the parent's).
func cellFaults() string {
	if f := os.Getenv(faultEnv); f != "" {
		return f
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(os.Getppid()) + "/environ")
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, faultEnv+"="); ok {
			return v
		}
	}
	return ""
}

// runFaultyCell is `thumbd cell` with faultEngine around libvips.
func runFaultyCell(mode string) error {
	switch mode {
	case "die":
		return errors.New("told to die before its hello")
	case "unsealed":
		// Its hello says seccomp is off, as under a runtime that refuses
		// it; no libvips.
		conn, err := cell.Socket(os.Getenv)
		if err != nil {
			return err
		}
		return cell.Worker{Engine: faultEngine{}}.Serve(conn, cell.Hello{PID: os.Getpid(), Sandbox: celltest.Unsealed()})
	}
	return engines.ServeCell(os.Getenv, os.Stderr, func(e cell.Engine) cell.Engine { return faultEngine{e} })
}

type faultEngine struct{ cell.Engine }

func (f faultEngine) Run(ctx context.Context, src thumbjob.Source, job thumbjob.Job) (thumbjob.Result, error) {
	// A 422 carries the outcome back to the test.
	report := func(what string, err error) (thumbjob.Result, error) {
		return thumbjob.Result{}, fmt.Errorf("%w: %s: %v", thumbjob.ErrUndecodable, what, err)
	}
	o := job.Options
	switch o.Width {
	case wOpen:
		fd, err := syscall.Open("/etc/hostname", syscall.O_RDONLY, 0)
		syscall.Close(fd)
		return report("open", err)
	case wSocket:
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		syscall.Close(fd)
		return report("socket", err)
	case wExec:
		return report("exec", syscall.Exec("/bin/true", []string{"true"}, nil))
	case wSegfault:
		var p *int
		*p = 1
	case wHang:
		select {}
	}
	return f.Engine.Run(ctx, src, job)
}

// cellsServer is the service in cells mode, its cells this test binary.
type cellsServer struct {
	*httptest.Server
	deps deps
	pool *cellpool.Pool
	logs *launch.Log
}

func newCellsServer(t *testing.T, cfg config, faults string) *cellsServer {
	t.Helper()
	return newCellsServerTraced(t, cfg, faults, nil)
}

// newCellsServerTraced is newCellsServer with tracing tr (nil: off).
func newCellsServerTraced(t *testing.T, cfg config, faults string, tr *tracing.Tracing) *cellsServer {
	t.Helper()
	cfg.Engine = engineCells
	logs := &launch.Log{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	pc, err := engines.PoolConfig(cfg.cells(), logger, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if faults != "" {
		pc.Spec.Env = append(pc.Spec.Env, faultEnv+"="+faults)
	}
	pool := cellpool.New(pc)
	if err := pool.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Stop)
	waitFor(t, "every cell", func() bool {
		s := pool.Stats()
		return len(s.PIDs) == cfg.Concurrency+cfg.CellSpares && s.Starting == 0
	})
	life := lifecycle.New()
	life.EngineStarted()
	d := newDeps(cfg, logger, engines.Cells{Pool: pool}, life, sourceRoot(t, cfg), tr)
	return &cellsServer{Server: newTestServerFrom(t, d), deps: d, pool: pool, logs: logs}
}

// waitFor polls cond; the bound is a safety net, not a timing claim.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func cellsConfig(t *testing.T) config {
	cfg := testConfig(t)
	cfg.Concurrency, cfg.CellSpares = 2, 1
	return cfg
}

// alike gives cfg the secret that keys uploads' identity in every
// instance a test compares (THUMBD_RESULT_STORE_KEY's, as replicas
// sharing a store hold it): their answers to one upload then carry one
// ETag, which instances with keys of their own would not.
func alike(cfg config) config {
	cfg.ResultStoreKeys = [][]byte{[]byte("the compared instances' secret")}
	return cfg
}

// Both engine modes answer every request alike: the same image bytes, or
// the same status, code and message. Each engine error has a row, so a new
// one cannot answer differently (a 500, say) in cells mode.
func TestCellsAnswerLikeInProcess(t *testing.T) {
	// Limits low enough for small sources to reach every engine error.
	limits := func(cfg config) config {
		cfg.MaxFrames, cfg.MaxAnimationPixels = 4, 10000
		return cfg
	}
	inproc, _ := newTestServer(t, alike(limits(testConfig(t))))
	cells := newCellsServer(t, alike(limits(cellsConfig(t))), "")
	jpeg := encodeJPEG(t, scene(400, 300), 85)
	cases := []struct {
		query string
		src   []byte
		code  apierr.Code // "" for an image
	}{
		{"", jpeg, ""},
		{"?w=100&h=80&fit=contain&format=webp&q=60", jpeg, ""},
		{"?w=64&fit=inside&format=jpeg", alphaPNG(t, 120, 90), ""},
		{"?w=50&h=50&gravity=entropy", animatedGIF(t, 60, 40, 3), ""},
		{"?w=33&h=77&fit=fill", greyPNG(t, 40, 40), ""},
		// AVIF is no input format; format=auto on a source with alpha
		// gives its alpha format (PNG here), not the opaque one.
		{"?w=64&format=avif", jpeg, ""},
		{"?w=64&format=auto", alphaPNG(t, 120, 90), ""},
		{"?w=48&format=webp&animated=true", animatedGIF(t, 60, 40, 3), ""},
		// Focal crops: the point travels in the job's options.
		{"?w=60&h=60&gravity=focal&fx=0.85&fy=0.2", jpeg, ""},
		{"?w=30&h=30&gravity=focal&fx=0.1&fy=0.9&format=webp&animated=true", animatedGIF(t, 60, 40, 3), ""},
		// One row per engine error.
		{"", []byte("not an image"), apierr.UnsupportedFormat},
		{"", jpeg[:len(jpeg)/2], apierr.UnprocessableImage},
		{"", hostile.GIFBomb(65535, 65535), apierr.TooManyPixels},
		{"", animatedGIF(t, 20, 20, 5), apierr.TooManyFrames},
		{"?w=100&h=100&format=webp&animated=true", animatedGIF(t, 60, 40, 3), apierr.AnimationTooLarge},
		{"?crop=0,350,10,10", jpeg, apierr.BadParameter}, // outside once turned: the engine finds it
	}
	answered := map[apierr.Code]bool{}
	for _, c := range cases {
		s1, h1, b1 := postThumb(t, inproc.URL, c.query, c.src)
		s2, h2, b2 := postThumb(t, cells.URL, c.query, c.src)
		if s1 != s2 || h1.Get("Content-Type") != h2.Get("Content-Type") || h1.Get("ETag") != h2.Get("ETag") || !bytes.Equal(b1, b2) {
			t.Errorf("%q: in process %d %s (%d bytes), cells %d %s (%d bytes): %s", c.query, s1, h1.Get("Content-Type"), len(b1), s2, h2.Get("Content-Type"), len(b2), b2)
		}
		if c.code == "" {
			continue
		}
		var e errorBody
		if json.Unmarshal(b1, &e) != nil || e.Code != string(c.code) || s1 != c.code.Status() {
			t.Errorf("%q: %d %s, want %d %s", c.query, s1, b1, c.code.Status(), c.code)
		}
		answered[c.code] = true
	}
	for _, e := range thumbjob.Errors() {
		if !answered[e.Code] {
			t.Errorf("no row gives %s (%q): add one", e.Code, e)
		}
	}
}

func TestCellsRunSandboxed(t *testing.T) {
	cells := newCellsServer(t, cellsConfig(t), "")
	landlock := false
	if abi, _, errno := syscall.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION); errno == 0 && int(abi) >= 1 {
		landlock = true
	}
	for _, pid := range cells.pool.Stats().PIDs {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"\nSeccomp:\t2\n", "\nNoNewPrivs:\t1\n"} {
			if !bytes.Contains(status, []byte(want)) {
				t.Errorf("cell %d: no %q in its status", pid, strings.TrimSpace(want))
			}
		}
		if held := cellCapabilities(t, pid); len(held) > 0 {
			t.Errorf("cell %d holds capabilities: %s", pid, strings.Join(held, ", "))
		}
	}
	_, _, body := do(t, "GET", cells.URL+"/metrics", nil)
	for _, name := range sandbox.Names() {
		want := name != sandbox.Landlock || landlock
		if got := bytes.Contains(body, []byte(`thumbd_sandbox_layer{layer="`+name+`"} 1`)); got != want {
			t.Errorf("layer %s on: %v, want %v (%v)", name, got, want, cells.pool.Layers())
		}
	}
	if logs := cells.logs.String(); strings.Contains(logs, "sandbox layer is off") != !landlock {
		t.Errorf("a warning is logged once for a layer that is off, and only then:\n%s", logs)
	}
}

func TestSandboxedCellCannotOpenSocketOrExec(t *testing.T) {
	cells := newCellsServer(t, cellsConfig(t), "1")
	src := encodeJPEG(t, scene(40, 30), 85)
	status, _, body := postThumb(t, cells.URL, "?w="+strconv.Itoa(wOpen), src)
	if status != 422 || !bytes.Contains(body, []byte("operation not permitted")) {
		t.Errorf("open: %d %s", status, body)
	}
	for _, w := range []int{wSocket, wExec} {
		status, h, body := postThumb(t, cells.URL, "?w="+strconv.Itoa(w), src)
		assertError(t, body, apierr.EngineCrashed)
		if status != 500 {
			t.Errorf("w=%d: %d %s", w, status, body)
		}
		id := h.Get("X-Request-Id")
		waitFor(t, "the log line", func() bool { return crashLogged(cells.logs.String(), id, "signal SIGSYS") })
	}
	// The crash count is kept by the goroutine that waits for the cell's
	// end, which may run after the answer has been written.
	waitFor(t, "two SIGSYS crashes counted", func() bool {
		s := cells.pool.Stats()
		return s.Crashes["signal SIGSYS"] == 2 && s.Exits[cellpool.ExitCrashInJob] == 2
	})
	if status, _, _ := postThumb(t, cells.URL, "", src); status != 200 {
		t.Errorf("after the kills: %d", status)
	}
}

// crashLogged finds the request's error line naming how its cell ended.
func crashLogged(logs, requestID, exit string) bool {
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Msg, RequestID, Code string
			Err                  struct {
				CellPID int `json:"cell_pid"`
				Exit    string
			}
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request failed" && rec.Code == "engine_crashed" &&
			strings.Contains(line, `"request_id":"`+requestID+`"`) && rec.Err.Exit == exit && rec.Err.CellPID > 0 {
			return true
		}
	}
	return false
}

func TestKillingACellMidJobCostsThatRequest(t *testing.T) {
	cells := newCellsServer(t, cellsConfig(t), "1")
	src := encodeJPEG(t, scene(400, 300), 85)
	type answer struct {
		status int
		id     string
		body   []byte
	}
	hung := make(chan answer, 1)
	go func() {
		s, h, b := postThumb(t, cells.URL, "?w="+strconv.Itoa(wHang), src)
		hung <- answer{s, h.Get("X-Request-Id"), b}
	}()
	waitFor(t, "the job to run", func() bool { return len(cells.pool.Stats().BusyPIDs) == 1 })
	victim := cells.pool.Stats().BusyPIDs[0]
	var wg sync.WaitGroup
	others := make(chan int, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _, _ := postThumb(t, cells.URL, "?w=64", src)
			others <- s
		}()
	}
	syscall.Kill(victim, syscall.SIGSEGV)
	a := <-hung
	wg.Wait()
	close(others)
	if a.status != 500 {
		t.Fatalf("the killed job: %d %s", a.status, a.body)
	}
	assertError(t, a.body, apierr.EngineCrashed)
	for s := range others {
		if s != 200 {
			t.Errorf("another request got %d", s)
		}
	}
	waitFor(t, "the log line", func() bool { return crashLogged(cells.logs.String(), a.id, "signal SIGSEGV") })
	if got := testutil.ToFloat64(cells.deps.metrics.Rejections.WithLabelValues("engine_crashed")); got != 1 {
		t.Errorf("engine_crashed counted %v times", got)
	}
	waitFor(t, "the replacement and the crash counted", func() bool {
		s := cells.pool.Stats()
		return len(s.PIDs) == 3 && !slices.Contains(s.PIDs, victim) && s.Crashes["signal SIGSEGV"] == 1
	})
	if s := cells.pool.Stats(); s.Exits[cellpool.ExitCrashInJob] != 1 || s.Crashes["signal SIGSEGV"] != 1 {
		t.Errorf("%+v", s)
	}
}

func TestCellFaultIsNotRetried(t *testing.T) {
	cells := newCellsServer(t, cellsConfig(t), "1")
	started := cells.pool.Stats().Started
	status, _, body := postThumb(t, cells.URL, "?w="+strconv.Itoa(wSegfault), encodeJPEG(t, scene(40, 30), 85))
	if status != 500 {
		t.Fatalf("%d %s", status, body)
	}
	waitFor(t, "the replacement and the crash counted", func() bool {
		s := cells.pool.Stats()
		return len(s.PIDs) == 3 && len(s.Crashes) > 0
	})
	if s := cells.pool.Stats(); s.Crashes["signal SIGSEGV"] != 1 || s.Started != started+1 {
		t.Errorf("one crash, one replacement, no retry: %+v (started %d before)", s, started)
	}
}

func TestCellPastDeadlineIsKilledWith504(t *testing.T) {
	cfg := cellsConfig(t)
	cfg.Deadline = time.Second
	cells := newCellsServer(t, cfg, "1")
	src := encodeJPEG(t, scene(40, 30), 85)
	status, _, body := postThumb(t, cells.URL, "?w="+strconv.Itoa(wHang), src)
	if status != 504 {
		t.Fatalf("%d %s", status, body)
	}
	assertError(t, body, apierr.DeadlineExceeded)
	waitFor(t, "the replacement", func() bool { s := cells.pool.Stats(); return s.Exits[cellpool.ExitDeadline] == 1 && len(s.PIDs) == 3 })
	if len(cells.pool.Stats().Crashes) != 0 {
		t.Error("a cell killed for its deadline is not a crash")
	}
	if status, _, _ := postThumb(t, cells.URL, "", src); status != 200 {
		t.Errorf("next request: %d", status)
	}
}

// Fresh cells for every job, some of them crashing: once the pool is
// stopped, no process, zombie or descriptor is left.
func TestCellsLeakNothing(t *testing.T) {
	before := celltest.OpenFDs(t)
	cfg := cellsConfig(t)
	cfg.CellJobs = 1
	cells := newCellsServer(t, cfg, "1")
	src := encodeJPEG(t, scene(40, 30), 85)
	var wg sync.WaitGroup
	for i := 0; i < 24; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := 64
			if i%4 == 0 {
				w = wSegfault
			}
			postThumb(t, cells.URL, "?w="+strconv.Itoa(w), src)
		}()
	}
	wg.Wait()
	cells.Close()
	cells.pool.Stop()
	if kids := celltest.Children(t, os.Getpid()); len(kids) != 0 {
		t.Fatalf("child processes left: %v", kids)
	}
	http.DefaultClient.CloseIdleConnections()
	waitFor(t, "descriptors to be released", func() bool { return celltest.OpenFDs(t) <= before })
}

func TestCellsDrainOnSIGTERM(t *testing.T) {
	c := startChild(t, "THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY=1")
	waitReady(t, c.addr)
	cellPIDs := celltest.Children(t, c.cmd.Process.Pid)
	if len(cellPIDs) != 2 {
		t.Fatalf("cells %v, want 1 + 1 spare", cellPIDs)
	}
	type result struct {
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := slowRequest(t, c.addr)
		if err != nil {
			done <- result{0, err}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- result{resp.StatusCode, nil}
	}()
	waitRunning(t, c.addr, 1)
	c.cmd.Process.Signal(syscall.SIGTERM)
	if r := <-done; r.err != nil || r.status != 200 {
		t.Fatalf("the admitted thumbnail: %d %v", r.status, r.err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit %d; logs:\n%s", code, c.logs)
	}
	for _, pid := range cellPIDs {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("cell %d outlived its supervisor", pid)
		}
	}
	if !regexp.MustCompile(`"msg":"stopped"`).MatchString(c.logs.String()) {
		t.Errorf("no clean stop in the logs:\n%s", c.logs)
	}
}

// Every thread of a cell, libvips' included once it has made a thumbnail,
// runs at nice 5, and the supervisor's at 0: the pixel work yields the CPU
// to the threads that accept connections and answer probes.
func TestCellsRunBelowTheSupervisor(t *testing.T) {
	c := startChild(t, "THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY=1")
	waitReady(t, c.addr)
	postThumb(t, c.addr, "?w=64", encodeJPEG(t, scene(800, 600), 85))
	threadNices := func(pid int) map[int64]int {
		tids, err := procfs.Tasks(pid)
		if err != nil {
			t.Fatal(err)
		}
		nices := map[int64]int{}
		for _, tid := range tids {
			if st, err := procfs.ReadTaskStat(pid, tid); err == nil { // else ended since the listing
				nices[st.Nice]++
			}
		}
		return nices
	}
	if got := threadNices(c.cmd.Process.Pid); len(got) != 1 || got[0] == 0 {
		t.Errorf("supervisor threads by nice value: %v, want all at 0", got)
	}
	// A spare started after the job runs one thread at nice 0 until it
	// has lowered itself: under load that can take a moment, so each cell
	// has 10 s to get there (the bound is the test's, not the cells').
	for _, pid := range celltest.Children(t, c.cmd.Process.Pid) {
		var got map[int64]int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if got = threadNices(pid); len(got) == 1 && got[5] >= 2 || time.Now().After(deadline) {
				break
			}
		}
		if len(got) != 1 || got[5] < 2 {
			t.Errorf("cell %d threads by nice value: %v, want all (2 or more) at 5", pid, got)
		}
	}
}

func TestCellsThatCannotStartStopTheService(t *testing.T) {
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
		Env: []string{"THUMBD_TEST_MAIN=1", "THUMBD_ENGINE=cells", faultEnv + "=die"}, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(0) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if code, err := srv.Wait(ctx); err != nil || code != 1 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if !strings.Contains(logs.String(), "engine: cell") {
		t.Errorf("the reason is not given:\n%s", logs)
	}
}

// THUMBD_SANDBOX_REQUIRED: cells whose sandbox has a layer off stop the
// service at start, naming the layer; without it they serve, with a
// warning.
func TestCellsWithALayerOffStopTheServiceWhenRequired(t *testing.T) {
	for _, required := range []bool{true, false} {
		logs := &launch.Log{}
		srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
			Env: []string{"THUMBD_TEST_MAIN=1", "THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY=1", faultEnv + "=unsealed",
				"THUMBD_SANDBOX_REQUIRED=" + strconv.FormatBool(required)}, Stderr: logs})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Stop(0) })
		if !required {
			if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
				t.Fatalf("best effort: %v; logs:\n%s", err, logs)
			}
			waitFor(t, "the warning", func() bool { return strings.Contains(logs.String(), "cell sandbox layer is off") })
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		code, err := srv.Wait(ctx)
		cancel()
		if err != nil || code != 1 {
			t.Fatalf("required: exit %d, %v; logs:\n%s", code, err, logs)
		}
		if !strings.Contains(logs.String(), "seccomp") || !strings.Contains(logs.String(), "THUMBD_SANDBOX_REQUIRED") {
			t.Errorf("required: the reason names neither the layer nor the setting:\n%s", logs)
		}
	}
}

func TestCellsMetrics(t *testing.T) {
	cells := newCellsServer(t, cellsConfig(t), "")
	postThumb(t, cells.URL, "", encodeJPEG(t, scene(40, 30), 85))
	problems, err := testutil.GatherAndLint(cells.deps.registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	_, _, body := do(t, "GET", cells.URL+"/metrics", nil)
	for _, want := range []string{
		`thumbd_engine_info{mode="cells"} 1`, `thumbd_cells{state="idle"} 3`, "thumbd_cell_starts_total 3",
		`thumbd_cell_exits_total{reason="crash_in_job"} 0`, `thumbd_cell_exits_total{reason="crash_before_job"} 0`,
		"thumbd_cell_start_backoff_seconds 0", "thumbd_cell_resident_memory_bytes ",
		"thumbd_sandbox_layer{", "thumbd_libvips_memory_bytes ",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`\nthumbd_libvips_memory_peak_bytes (\S+)`).FindSubmatch(body); m == nil || string(m[1]) == "0" {
		t.Errorf("libvips' peak as the cells reported it: %q", m)
	}
}

// cellDescriptors is what each descriptor of a process points to, by
// number (/proc/PID/fd's links: "socket:[N]", "pipe:[N]", "/dev/null").
func cellDescriptors(t *testing.T, pid int) map[int]string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if link, err := os.Readlink(dir + "/" + e.Name()); err == nil {
			out[fd] = link
		}
	}
	return out
}

// strangeDescriptors lists what a cell holds beyond its own: stdin and
// stdout on /dev/null, stderr, its socket on 3, and the Go runtime's
// poller (an epoll and an eventfd).
func strangeDescriptors(fds map[int]string) []string {
	var out []string
	for fd, link := range fds {
		switch {
		case fd <= 2:
		case fd == 3 && strings.HasPrefix(link, "socket:"):
		case link == "anon_inode:[eventpoll]" || link == "anon_inode:[eventfd]":
		default:
			out = append(out, fmt.Sprintf("%d -> %s", fd, link))
		}
	}
	slices.Sort(out)
	return out
}

// A supervisor started with a descriptor it was not told about (fd 10, as
// a careless parent or a socket-activating init hands down) does not pass
// it on to its cells.
func TestCellsInheritNoDescriptor(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
		Env:    []string{"THUMBD_TEST_MAIN=1", "THUMBD_ENGINE=cells", "THUMBD_CONCURRENCY=1", "THUMBD_CELL_SPARES=1"},
		Stderr: logs,
		StartProcess: func(c *exec.Cmd) error {
			// fds 3 to 10 in the supervisor, not close-on-exec there.
			c.ExtraFiles = []*os.File{w, w, w, w, w, w, w, w}
			return c.Start()
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(0) })
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		t.Fatalf("%v; logs:\n%s", err, logs)
	}
	pids := sealedCells(t, srv.Cmd.Process.Pid, 2)
	if fds := cellDescriptors(t, srv.Cmd.Process.Pid); !strings.HasPrefix(fds[10], "pipe:") {
		t.Fatalf("the supervisor was not given fd 10: %v", fds)
	}
	for _, pid := range pids {
		fds := cellDescriptors(t, pid)
		if strange := strangeDescriptors(fds); len(strange) > 0 {
			t.Errorf("cell %d holds %s", pid, strings.Join(strange, ", "))
		}
	}
}

// cellCapabilities lists the capability sets of any thread of pid that are
// not empty ("1234 CapEff 000001fffeffffff"): capabilities belong to
// threads, and a cell's libvips threads start before its sandbox.
func cellCapabilities(t *testing.T, pid int) []string {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, task := range tasks {
		status, err := os.ReadFile(dir + task.Name() + "/status")
		if err != nil {
			continue
		}
		for _, m := range regexp.MustCompile(`(?m)^(Cap(?:Inh|Prm|Eff|Amb)):\t(\S+)$`).FindAllSubmatch(status, -1) {
			if string(m[2]) != "0000000000000000" {
				held = append(held, task.Name()+" "+string(m[1])+" "+string(m[2]))
			}
		}
	}
	return held
}

// sealedCells waits for n cells of the supervisor to be sandboxed (their
// seccomp filter on: after their hello) and returns their PIDs.
func sealedCells(t *testing.T, supervisor, n int) []int {
	t.Helper()
	var sealed []int
	waitFor(t, strconv.Itoa(n)+" sandboxed cells", func() bool {
		sealed = sealed[:0]
		for _, pid := range celltest.Children(t, supervisor) {
			if status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil && bytes.Contains(status, []byte("\nSeccomp:\t2\n")) {
				sealed = append(sealed, pid)
			}
		}
		return len(sealed) == n
	})
	return sealed
}

// Each cell's RLIMIT_AS follows the jobs' memory budget: a small budget
// gives a small limit (the default without one is 4 GiB over the cell's
// start-up mappings).
func TestCellAddressSpaceFollowsTheBudget(t *testing.T) {
	cfg := cellsConfig(t)
	cfg.MemoryBudget = 64 << 20
	cells := newCellsServer(t, cfg, "")
	for _, pid := range cells.pool.Stats().PIDs {
		limits, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
		if err != nil {
			t.Fatal(err)
		}
		var soft uint64
		for _, line := range strings.Split(string(limits), "\n") {
			if rest, ok := strings.CutPrefix(line, "Max address space"); ok {
				soft, _ = strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			}
		}
		if soft == 0 || soft > 3<<30 {
			t.Errorf("cell %d: RLIMIT_AS %d with a 64 MiB budget, want at most 3 GiB (its ~1.9 GB of start-up mappings + budget + 512 MiB; the default adds 4 GiB)", pid, soft)
		}
	}
	if status, _, body := postThumb(t, cells.URL, "?w=64", encodeJPEG(t, scene(400, 300), 85)); status != 200 {
		t.Errorf("a thumbnail under the derived limit: %d %s", status, body)
	}
}

// A cell trims its heap only after a job estimated large: a 7000x5000 PNG
// (whose header alone says so), not a small JPEG, nor bytes with no header.
func TestCellTrimsAfterLargeJobsOnly(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
	png = binary.BigEndian.AppendUint32(png, 7000)
	png = binary.BigEndian.AppendUint32(png, 5000)
	png = append(png, 8, 2, 0, 0, 0)
	small, err := os.ReadFile("internal/thumb/testdata/sources/small.jpg")
	if err != nil {
		t.Fatal(err)
	}
	box := thumbjob.Job{Options: thumbjob.Options{Width: 256, Height: 256, Fit: thumbjob.FitCover, Format: imagefmt.PNG}}
	large := func(src []byte) bool {
		look, _ := memcost.Look(src) // the supervisor's look, which travels to the cell
		return engines.LargeJob(look, box)
	}
	if !large(png) || large(small) || large([]byte("not an image")) {
		t.Fatalf("large: 35 MP PNG %v, small JPEG %v, garbage %v; want true, false, false",
			large(png), large(small), large([]byte("not an image")))
	}
}
