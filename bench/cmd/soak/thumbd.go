package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/internal/launch"
)

// proc is a running thumbd, started by internal/launch.
type proc struct {
	srv  *launch.Server
	base string
	pid  int
	logs *serverLog
}

// serverLog keeps what thumbd logged per request (debug level logs every
// request with its ID and status) and its error lines. It is the process's
// stderr: Write splits what it gets into lines.
type serverLog struct {
	mu       sync.Mutex
	partial  []byte
	answered map[string]int // request ID -> status
	durMax   map[int]float64
	errors   []string
}

func newServerLog() *serverLog {
	return &serverLog{answered: map[string]int{}, durMax: map[int]float64{}}
}

// mallocEnv is the environment that selects an allocator for the load mode.
func mallocEnv(malloc string) ([]string, error) {
	switch malloc {
	case "", "glibc":
		return nil, nil
	case "arena2":
		return []string{"MALLOC_ARENA_MAX=2"}, nil
	case "jemalloc":
		lib := "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
		if _, err := os.Stat(lib); err != nil {
			return nil, fmt.Errorf("jemalloc: %v (apt-get install libjemalloc2)", err)
		}
		return []string{"LD_PRELOAD=" + lib}, nil
	}
	return nil, fmt.Errorf("unknown allocator %q", malloc)
}

func startThumbd(o options, malloc string, extra ...string) (*proc, error) {
	env, err := mallocEnv(malloc)
	if err != nil {
		return nil, err
	}
	env = append(append(append([]string{"THUMBD_LOG_LEVEL=debug"}, env...), o.env...), extra...)
	logs := newServerLog()
	srv, err := launch.Start(context.Background(), launch.Spec{Command: []string{o.bin}, Env: env, Stderr: logs})
	if err != nil {
		return nil, err
	}
	if err := srv.WaitReady(context.Background(), 20*time.Second); err != nil {
		srv.Stop(time.Second)
		return nil, fmt.Errorf("thumbd never became ready: %w", err)
	}
	return &proc{srv: srv, base: srv.URL(), pid: srv.Cmd.Process.Pid, logs: logs}, nil
}

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	buf := append(l.partial, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, buf[:i])
		buf = buf[i+1:]
	}
	l.partial = append([]byte(nil), buf...)
	l.mu.Unlock()
	for _, line := range lines {
		l.add(line)
	}
	return len(p), nil
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

// exited reports whether thumbd has exited, and how ("exit status 2",
// "signal: segmentation fault").
func (p *proc) exited() (bool, string) {
	if p.srv.Exited() == nil {
		return false, ""
	}
	_, _ = p.srv.Wait(context.Background())
	return true, p.srv.Cmd.ProcessState.String()
}

// waitExit waits up to d for thumbd to exit; it returns its code, or false
// when it still runs.
func (p *proc) waitExit(d time.Duration) (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	code, err := p.srv.Wait(ctx)
	return code, err == nil
}

// terminate sends SIGTERM, as Kubernetes does.
func (p *proc) terminate() { _ = p.srv.Signal(syscall.SIGTERM) }

// stop ends the process if it still runs (SIGKILL after SIGTERM and 40 s).
func (p *proc) stop() { _ = p.srv.Stop(40 * time.Second) }
