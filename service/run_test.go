package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"github.com/thumbd/thumbd/service/internal/lifecycle"
	"github.com/thumbd/thumbd/service/internal/pipeline"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
	"github.com/thumbd/thumbd/service/internal/thumb"
)

// child is thumbd running as a real process: this test binary re-executed
// (see TestMain), started by internal/launch on a free port.
type child struct {
	cmd  *exec.Cmd
	srv  *launch.Server
	addr string
	logs *launch.Log
}

// startChild starts the child and waits until it is ready.
func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	logs := &launch.Log{}
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{os.Args[0]},
		Env: append([]string{"THUMBD_TEST_MAIN=1", "THUMBD_LOG_LEVEL=debug"}, env...), Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(0) })
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		t.Fatalf("%v; logs:\n%s", err, logs)
	}
	return &child{cmd: srv.Cmd, srv: srv, addr: srv.URL(), logs: logs}
}

// wait returns the child's exit code.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := c.srv.Wait(ctx)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return code
}

var runningJobs = regexp.MustCompile(`(?m)^thumbd_thumbnail_jobs_running (\d+)`)

// waitRunning polls /metrics until n thumbnails are being processed.
func waitRunning(t *testing.T, base string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := runningJobs.FindSubmatch(b); m != nil {
				if v, _ := strconv.Atoi(string(m[1])); v >= n {
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("thumbnail never started")
}

// slowRequest is a thumbnail that takes a while: a 4096x4096 PNG of a
// small source, mostly encoding time.
func slowRequest(t *testing.T, base string) (*http.Response, error) {
	src := encodeJPEG(t, scene(400, 300), 90)
	return http.Post(base+"/thumbnail?w=4096&h=4096&fit=fill", "application/octet-stream", bytes.NewReader(src))
}

func TestSIGTERMFinishesAdmittedThumbnailAndExitsZero(t *testing.T) {
	c := startChild(t, "THUMBD_CONCURRENCY=1")
	type result struct {
		status int
		body   []byte
		err    error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := slowRequest(t, c.addr)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{resp.StatusCode, b, err}
	}()
	waitRunning(t, c.addr, 1)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.status != 200 {
		t.Fatalf("in-flight thumbnail: status %d err %v; logs:\n%s", r.status, r.err, c.logs)
	}
	img, err := png.Decode(bytes.NewReader(r.body))
	if err != nil || img.Bounds().Dx() != 4096 {
		t.Fatalf("in-flight thumbnail incomplete: %v", err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit code %d; logs:\n%s", code, c.logs)
	}
	// After the listener closed, new connections are refused.
	if _, err := http.Get(c.addr + "/health"); err == nil {
		t.Fatal("still accepting after exit")
	}
}

func TestShutdownDelayKeepsServingWithReadyDown(t *testing.T) {
	c := startChild(t, "THUMBD_SHUTDOWN_DELAY=1s")
	waitReady(t, c.addr)
	start := time.Now()
	c.cmd.Process.Signal(syscall.SIGTERM)
	// During the delay: /ready 503 draining, /health still 200.
	var sawDraining bool
	for time.Since(start) < 700*time.Millisecond {
		resp, err := http.Get(c.addr + "/ready")
		if err != nil {
			t.Fatalf("refused during the delay: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 503 && string(b) == `{"status":"draining"}` {
			sawDraining = true
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sawDraining {
		t.Fatal("/ready never said draining")
	}
	if resp, err := http.Get(c.addr + "/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health during the delay: %v", err)
	}
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if el := time.Since(start); el < time.Second {
		t.Fatalf("exited after %s, before the 1s delay", el)
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := launch.WaitReady(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"thumbd"}, envOf(map[string]string{"THUMBD_QUEUE": "-1"}), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "queue") {
		t.Fatalf("got %v", err)
	}
	err = run(context.Background(), []string{"thumbd"}, envOf(map[string]string{"THUMBD_SOURCE_DIR": "/no/such/dir"}), io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "source directory") {
		t.Fatalf("missing source dir: got %v", err)
	}
}

func TestHealthSubcommand(t *testing.T) {
	ok := httptest.NewServer((&pipeline.Responder{}).Handle(lifecycle.HandleHealth))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer bad.Close()
	env := envOf(nil)
	if err := run(context.Background(), []string{"thumbd", "health", "-url", ok.URL}, env, io.Discard, io.Discard); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	if err := run(context.Background(), []string{"thumbd", "health", "-url", bad.URL}, env, io.Discard, io.Discard); err == nil {
		t.Fatal("500 reported healthy")
	}
	// Nothing listening on the port from PORT.
	ln := httptest.NewServer(nil)
	port := ln.URL[strings.LastIndex(ln.URL, ":")+1:]
	ln.Close()
	if err := run(context.Background(), []string{"thumbd", "health"}, envOf(map[string]string{"PORT": port}), io.Discard, io.Discard); err == nil {
		t.Fatal("closed port reported healthy")
	}
}

// TestStartupWarnsOfKnownLibvipsCrash: a libvips with a known crash (Debian
// bookworm's 8.14.1 has one) is named in a warning at start-up; a fixed one
// (the images' 8.16.1) is not.
func TestStartupWarnsOfKnownLibvipsCrash(t *testing.T) {
	c := startChild(t)
	waitReady(t, c.addr)
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	var warned string
	sc := bufio.NewScanner(bytes.NewReader(c.logs.Bytes()))
	for sc.Scan() {
		var rec struct{ Level, Msg string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Level == "WARN" && strings.Contains(rec.Msg, "libvips") {
			warned = rec.Msg
		}
	}
	want := thumb.KnownCrash(thumb.Version())
	if warned != want {
		t.Fatalf("libvips %s: start-up warning %q, want %q; logs:\n%s", thumb.Version(), warned, want, c.logs)
	}
}

// serve sets no process globals (tests run many services in one process):
// the logger is passed down, and only main routes the log package.
func TestServeLeavesTheDefaultLoggerAlone(t *testing.T) {
	before := slog.Default()
	cfg := testConfig(t)
	cfg.SourceDir = filepath.Join(t.TempDir(), "missing") // serve stops early
	if err := serve(context.Background(), cfg, io.Discard, nil); err == nil {
		t.Fatal("a missing source directory: no error")
	}
	if slog.Default() != before {
		slog.SetDefault(before)
		t.Fatal("serve replaced slog's default logger")
	}
}
