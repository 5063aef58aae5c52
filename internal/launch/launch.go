// Package launch starts a thumbd (or anything that serves its contract) on
// a free loopback port, as a local process or as a Docker container, and
// waits until it is ready. It is the one way the project starts a server to
// talk to: the bench driver and its tools, the soak, the service's own
// process tests and, through `bench serve`, the shell scripts.
//
// Start returns as soon as the server is spawned, so a caller can time the
// start itself; WaitReady then polls GET /ready until it answers 200, and
// gives up early when the server is gone.
package launch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec says what to start. Exactly one of Command and Image is set.
type Spec struct {
	// Command is a process's argv. argv[0] holding a slash is relative to
	// Dir (when not absolute); otherwise it is looked up on PATH.
	Command []string
	// Dir is the process's working directory ("": this one's).
	Dir string
	// Image is a container image, by name or ID, run with `docker run -d`.
	Image string
	// DockerArgs are more `docker run` flags, put before the image
	// (limits, hardening, --cpuset-cpus, --rm).
	DockerArgs []string
	// Network is a container's networking: "host" (the default: the
	// server listens on PORT in the host's network) or "bridge" (PORT
	// inside, published on 127.0.0.1 at the same number).
	Network string
	// Docker is the docker client to run (default "docker").
	Docker string
	// Env holds KEY=VALUE for the server, after this process's own
	// environment (processes) and after PORT, which Start sets.
	Env []string
	// Port is the port to serve on; 0 picks a free loopback port.
	Port int
	// Stdout and Stderr receive a process's output (nil discards it). A
	// container's output stays with Docker: see Logs.
	Stdout, Stderr io.Writer
	// StartProcess starts the prepared command; nil means (*exec.Cmd).Start.
	// The bench passes one that sets the CPU mask the child is born with.
	StartProcess func(*exec.Cmd) error
}

// Server is one started server.
type Server struct {
	Addr    string    // 127.0.0.1:PORT
	Port    int       // PORT
	Spawned time.Time // taken just before the fork, or before `docker run`
	// Cmd is a process's command (its Process to signal it); nil for a
	// container.
	Cmd *exec.Cmd
	// Container is the container's name; "" for a process.
	Container string

	docker  string
	exited  chan struct{} // closed once the process is reaped or `docker run` failed
	waitErr error         // the process's Wait error, or `docker run`'s; read after exited
	started chan struct{} // closed once `docker run -d` returned (at once for a process)
	startAt time.Time
	pid     int
}

// Log collects a process's output (give it as Spec.Stdout or Spec.Stderr)
// and can be read while the process writes.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Bytes returns a copy of what was written so far.
func (l *Log) Bytes() []byte { return []byte(l.String()) }

// FreePort asks the kernel for a free loopback port. Another process could
// take it before the server binds it; the server then fails loudly.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start spawns the server and returns at once.
func Start(ctx context.Context, s Spec) (*Server, error) {
	if (len(s.Command) == 0) == (s.Image == "") {
		return nil, errors.New("launch: want a command or an image, not both or neither")
	}
	port := s.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	srv := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port,
		exited: make(chan struct{}), started: make(chan struct{})}
	env := append([]string{"PORT=" + strconv.Itoa(port)}, s.Env...)
	if s.Image != "" {
		return srv, srv.startContainer(ctx, s, env)
	}
	return srv, srv.startProcess(s, env)
}

func (srv *Server) startProcess(s Spec, env []string) error {
	cmd := exec.Command(s.Command[0], s.Command[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = s.Stdout, s.Stderr
	// A group of its own: Signal and Stop reach what a wrapper (a shell
	// script, npm) started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild that keeps the output pipes open must not hold Wait.
	cmd.WaitDelay = 5 * time.Second
	start := s.StartProcess
	if start == nil {
		start = (*exec.Cmd).Start
	}
	srv.Spawned = time.Now()
	if err := start(cmd); err != nil {
		return fmt.Errorf("launch %s: %w", s.Command[0], err)
	}
	srv.startAt = time.Now()
	close(srv.started)
	srv.Cmd, srv.pid = cmd, cmd.Process.Pid
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.exited)
	}()
	return nil
}

func (srv *Server) startContainer(ctx context.Context, s Spec, env []string) error {
	srv.docker = s.Docker
	if srv.docker == "" {
		srv.docker = "docker"
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	srv.Container = fmt.Sprintf("thumbd-%d-%s", os.Getpid(), hex.EncodeToString(suffix[:]))
	args := []string{"run", "-d", "--name", srv.Container}
	switch s.Network {
	case "", "host":
		args = append(args, "--network", "host")
	case "bridge":
		args = append(args, "-p", fmt.Sprintf("127.0.0.1:%d:%d", srv.Port, srv.Port))
	default:
		return fmt.Errorf("launch: network %q: want host or bridge", s.Network)
	}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	args = append(append(args, s.DockerArgs...), s.Image)
	cmd := exec.CommandContext(ctx, srv.docker, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	srv.Spawned = time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	go func() {
		err := cmd.Wait()
		srv.startAt = time.Now()
		if err != nil {
			srv.waitErr = fmt.Errorf("docker run: %w: %s", err, strings.TrimSpace(stderr.String()))
			close(srv.exited)
		}
		close(srv.started)
	}()
	return nil
}

// URL is "http://" + Addr.
func (srv *Server) URL() string { return "http://" + srv.Addr }

// Started waits until a container's `docker run -d` has returned (the
// container created and started) and returns when it did; for a process,
// when the fork returned.
func (srv *Server) Started(ctx context.Context) (time.Time, error) {
	select {
	case <-srv.started:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	select {
	case <-srv.exited:
		if srv.Cmd == nil {
			return srv.startAt, srv.waitErr
		}
	default:
	}
	return srv.startAt, nil
}

// PID is the server's process ID on this machine (a container's main
// process, from docker inspect).
func (srv *Server) PID(ctx context.Context) (int, error) {
	if srv.pid != 0 {
		return srv.pid, nil
	}
	if _, err := srv.Started(ctx); err != nil {
		return 0, err
	}
	out, err := srv.Inspect(ctx, "{{.State.Pid}}")
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(out)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("launch: %s has no running process (pid %q)", srv.Container, out)
	}
	srv.pid = pid
	return pid, nil
}

// Inspect returns `docker inspect -f FORMAT` of a container.
func (srv *Server) Inspect(ctx context.Context, format string) (string, error) {
	if srv.Cmd != nil {
		return "", errors.New("launch: Inspect is for containers")
	}
	out, err := exec.CommandContext(ctx, srv.docker, "inspect", "-f", format, srv.Container).Output()
	if err != nil {
		return "", fmt.Errorf("docker inspect %s: %w%s", srv.Container, err, stderrOf(err))
	}
	return strings.TrimSpace(string(out)), nil
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// Exited reports, without blocking, why the server is gone: the process
// was reaped, or `docker run` failed. nil while it may still run.
func (srv *Server) Exited() error {
	select {
	case <-srv.exited:
	default:
		return nil
	}
	if srv.Cmd == nil {
		return srv.waitErr
	}
	if srv.waitErr != nil {
		return fmt.Errorf("%s exited: %w", srv.Cmd.Args[0], srv.waitErr)
	}
	return fmt.Errorf("%s exited", srv.Cmd.Args[0])
}

// Wait waits for a process to exit and returns its exit code (-1 when a
// signal ended it).
func (srv *Server) Wait(ctx context.Context) (int, error) {
	if srv.Cmd == nil {
		return 0, errors.New("launch: Wait is for processes; a container has Stop")
	}
	select {
	case <-srv.exited:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case srv.waitErr == nil:
		return 0, nil
	case errors.As(srv.waitErr, &exit):
		return exit.ExitCode(), nil
	}
	return 0, srv.waitErr
}

// Signal sends sig to a process's group, or to a container's main process.
func (srv *Server) Signal(sig syscall.Signal) error {
	if srv.Cmd != nil && srv.pid > 0 {
		return syscall.Kill(-srv.pid, sig)
	}
	out, err := exec.Command(srv.docker, "kill", "-s", strconv.Itoa(int(sig)), srv.Container).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker kill %s: %w: %s", srv.Container, err, bytes.TrimSpace(out))
	}
	return nil
}

// Stop ends the server and waits until it is gone: SIGTERM to a process's
// group, SIGKILL after grace; a container is removed (`docker rm -f`).
func (srv *Server) Stop(grace time.Duration) error {
	if srv.Cmd != nil && srv.pid > 0 {
		_ = syscall.Kill(-srv.pid, syscall.SIGTERM)
		select {
		case <-srv.exited:
		case <-time.After(grace):
			_ = syscall.Kill(-srv.pid, syscall.SIGKILL)
			<-srv.exited
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = srv.Started(ctx)
	out, err := exec.CommandContext(ctx, srv.docker, "rm", "-f", srv.Container).CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("No such container")) {
		return fmt.Errorf("docker rm -f %s: %w: %s", srv.Container, err, bytes.TrimSpace(out))
	}
	return nil
}

// Logs returns the last lines a container wrote ("" for a process, whose
// output went to Spec.Stdout and Spec.Stderr).
func (srv *Server) Logs() string {
	if srv.Cmd != nil {
		return ""
	}
	out, _ := exec.Command(srv.docker, "logs", "--tail", "30", srv.Container).CombinedOutput()
	return string(out)
}

// running reports whether a container still runs (an error once it has
// exited, with its last log lines); nil for a process, which Exited covers.
func (srv *Server) running(ctx context.Context) error {
	if srv.Cmd != nil {
		return nil
	}
	select {
	case <-srv.started:
	default:
		return nil // docker run has not returned yet
	}
	state, err := srv.Inspect(ctx, "{{.State.Status}}")
	if err != nil {
		return err
	}
	if state == "exited" || state == "dead" {
		return fmt.Errorf("container %s %s; its log:\n%s", srv.Container, state, srv.Logs())
	}
	return nil
}

// WaitReady polls the server's GET /ready until it answers 200, for at
// most timeout; it gives up as soon as the server is gone.
func (srv *Server) WaitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lastCheck := time.Now()
	return WaitReady(ctx, srv.URL(), func() error {
		if err := srv.Exited(); err != nil {
			return err
		}
		// A container that exits is seen by asking Docker, once a second.
		if time.Since(lastCheck) < time.Second {
			return nil
		}
		lastCheck = time.Now()
		return srv.running(ctx)
	})
}

// WaitReady polls base + "/ready" until it answers 200 or ctx ends. alive,
// when not nil, is asked between attempts: an error stops the wait.
func WaitReady(ctx context.Context, base string, alive func() error) error {
	client := &http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/ready", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = "HTTP " + strconv.Itoa(resp.StatusCode)
		} else if ctx.Err() == nil { // an attempt cut short by the end of the wait says nothing
			last = err.Error()
		}
		if alive != nil {
			if err := alive(); err != nil {
				return fmt.Errorf("not ready at %s: %w", base, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s/ready not 200 (%w; last: %s)", base, ctx.Err(), last)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
