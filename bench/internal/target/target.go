// Package target starts and stops the things the bench measures: a local
// binary as a process, a container image with `docker run`, or an
// already-running URL (load figures only).
package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
)

// Kind says how a target runs.
type Kind string

const (
	Process   Kind = "process"
	Container Kind = "container"
	URL       Kind = "url"
)

// Spec describes one target.
type Spec struct {
	Name    string   `json:"name"`
	Kind    Kind     `json:"kind"`
	Command []string `json:"command,omitempty"` // Process: argv; argv[0] relative to Dir or on PATH
	Image   string   `json:"image,omitempty"`   // Container
	// ImageID pins a container target to the image its tag named when the
	// run began (a rebuild during the run must not swap it); run by ID when set.
	ImageID string   `json:"image_id,omitempty"`
	URL     string   `json:"url,omitempty"` // URL: base URL, no trailing slash
	Env     []string `json:"env,omitempty"` // extra KEY=VALUE for the server
}

// Parse reads NAME=KIND:SPEC, e.g. "node=process:node bench/twins/node/server.mjs",
// "scratch=container:thumbd:scratch" or "prod=url:http://127.0.0.1:8080".
func Parse(s string) (Spec, error) {
	name, rest, ok := strings.Cut(s, "=")
	kind, spec, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || name == "" || spec == "" {
		return Spec{}, fmt.Errorf("target %q: want NAME=process|container|url:SPEC", s)
	}
	t := Spec{Name: name, Kind: Kind(kind)}
	switch t.Kind {
	case Process:
		t.Command = strings.Fields(spec)
	case Container:
		t.Image = spec
	case URL:
		t.URL = strings.TrimRight(spec, "/")
	default:
		return Spec{}, fmt.Errorf("target %q: unknown kind %q", s, kind)
	}
	return t, nil
}

// String is the spec as the report shows it.
func (s Spec) String() string {
	switch s.Kind {
	case Process:
		return strings.Join(s.Command, " ")
	case Container:
		if id := strings.TrimPrefix(s.ImageID, "sha256:"); id != "" {
			return "docker run " + s.Image + " (" + id[:min(12, len(id))] + ")"
		}
		return "docker run " + s.Image
	default:
		return s.URL
	}
}

// Options are the settings every start shares.
type Options struct {
	Dir           string // working directory of processes (the repo root)
	ServerCPUs    []int  // nil: not pinned
	LogFile       string // servers' stdout and stderr are appended here; "" discards
	DockerNetwork string // "host" (default) or "bridge"
}

// Instance is one running server.
type Instance struct {
	Spec    Spec
	Addr    string    // host:port the server answers on
	Spawned time.Time // taken just before the spawn (exec or docker run)

	cmd       *exec.Cmd
	exited    chan struct{} // closed when the process has been reaped
	container string
	dockerRun chan error
	log       *os.File
	pid       int
}

// BaseURL is "http://" + Addr.
func (i *Instance) BaseURL() string { return "http://" + i.Addr }

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var seq atomic.Int64

// Start spawns the target and returns at once: the caller polls for health.
func Start(ctx context.Context, spec Spec, opt Options) (*Instance, error) {
	if spec.Kind == URL {
		return &Instance{Spec: spec, Addr: strings.TrimPrefix(strings.TrimPrefix(spec.URL, "http://"), "https://")}, nil
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	inst := &Instance{Spec: spec, Addr: "127.0.0.1:" + strconv.Itoa(port)}
	var out *os.File
	if opt.LogFile != "" {
		if out, err = os.OpenFile(opt.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return nil, err
		}
		inst.log = out
	}
	switch spec.Kind {
	case Process:
		if len(spec.Command) == 0 {
			return nil, errors.New("target: empty command")
		}
		cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
		cmd.Dir = opt.Dir
		cmd.Env = append(append(os.Environ(), "PORT="+strconv.Itoa(port)), spec.Env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if out != nil {
			cmd.Stdout, cmd.Stderr = out, out
		}
		inst.Spawned = time.Now()
		if err := affinity.Start(cmd, opt.ServerCPUs); err != nil {
			inst.closeLog()
			return nil, err
		}
		inst.cmd, inst.pid = cmd, cmd.Process.Pid
		inst.exited = make(chan struct{})
		go func() { _ = cmd.Wait(); close(inst.exited) }()
	case Container:
		inst.container = fmt.Sprintf("thumbd-bench-%d-%d", os.Getpid(), seq.Add(1))
		args := []string{"run", "-d", "--rm", "--name", inst.container}
		if opt.DockerNetwork == "bridge" {
			args = append(args, "-p", fmt.Sprintf("127.0.0.1:%d:%d", port, port))
		} else {
			args = append(args, "--network", "host")
		}
		if len(opt.ServerCPUs) > 0 {
			args = append(args, "--cpuset-cpus", affinity.Format(opt.ServerCPUs))
		}
		args = append(args, "-e", "PORT="+strconv.Itoa(port))
		for _, e := range spec.Env {
			args = append(args, "-e", e)
		}
		if spec.ImageID != "" {
			args = append(args, spec.ImageID)
		} else {
			args = append(args, spec.Image)
		}
		cmd := exec.CommandContext(ctx, "docker", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		inst.dockerRun = make(chan error, 1)
		inst.Spawned = time.Now()
		if err := cmd.Start(); err != nil {
			inst.closeLog()
			return nil, err
		}
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("docker run: %w: %s", err, strings.TrimSpace(stderr.String()))
			}
			inst.dockerRun <- err
		}()
	default:
		return nil, fmt.Errorf("target: unknown kind %q", spec.Kind)
	}
	return inst, nil
}

// PID returns the server's process ID as seen from this machine (for a
// container, its main process); 0 for a URL target.
func (i *Instance) PID(ctx context.Context) (int, error) {
	switch i.Spec.Kind {
	case Process:
		return i.pid, nil
	case Container:
		if i.pid != 0 {
			return i.pid, nil
		}
		if err := i.waitDockerRun(ctx); err != nil {
			return 0, err
		}
		out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Pid}}", i.container).Output()
		if err != nil {
			return 0, fmt.Errorf("docker inspect %s: %w", i.container, err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil || pid <= 0 {
			return 0, fmt.Errorf("docker inspect %s: pid %q", i.container, out)
		}
		i.pid = pid
		return pid, nil
	}
	return 0, nil
}

func (i *Instance) waitDockerRun(ctx context.Context) error {
	if i.dockerRun == nil {
		return nil
	}
	select {
	case err := <-i.dockerRun:
		i.dockerRun = nil
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exited reports, without blocking, whether a container's `docker run`
// failed: a startup poll uses it to stop waiting for a server that is not
// coming. For processes it reports whether the process is gone.
func (i *Instance) Exited() error {
	switch i.Spec.Kind {
	case Container:
		if i.dockerRun == nil {
			return nil
		}
		select {
		case err := <-i.dockerRun:
			i.dockerRun = nil
			if err != nil {
				return err
			}
		default:
		}
	case Process:
		if i.exited == nil {
			return nil
		}
		select {
		case <-i.exited:
			return fmt.Errorf("%s exited (see its log)", i.Spec.Name)
		default:
		}
	}
	return nil
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a grace
// period; for a container `docker rm -f`. It waits until the server is gone.
func (i *Instance) Stop() error {
	defer i.closeLog()
	switch i.Spec.Kind {
	case Process:
		if i.cmd == nil {
			return nil
		}
		_ = syscall.Kill(-i.pid, syscall.SIGTERM)
		select {
		case <-i.exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-i.pid, syscall.SIGKILL)
			<-i.exited
		}
		i.cmd = nil
	case Container:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = i.waitDockerRun(ctx)
		if out, err := exec.CommandContext(ctx, "docker", "rm", "-f", i.container).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "No such container") {
			return fmt.Errorf("docker rm -f %s: %w: %s", i.container, err, out)
		}
	}
	return nil
}

func (i *Instance) closeLog() {
	if i.log != nil {
		i.log.Close()
		i.log = nil
	}
}
