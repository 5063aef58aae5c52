// Package target names the things the bench measures — a local binary as a
// process, a container image, or an already-running URL (load figures
// only) — and starts and stops them through internal/launch, pinned to the
// server CPUs.
package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/affinity"
	"github.com/thumbd/thumbd/internal/launch"
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
// A process's or a container's SPEC may start with KEY=VALUE words, as in
// a shell: "cells=process:THUMBD_ENGINE=cells bin/thumbd-static".
func Parse(s string) (Spec, error) {
	name, rest, ok := strings.Cut(s, "=")
	kind, spec, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || name == "" || spec == "" {
		return Spec{}, fmt.Errorf("target %q: want NAME=process|container|url:SPEC", s)
	}
	t := Spec{Name: name, Kind: Kind(kind)}
	words := strings.Fields(spec)
	if t.Kind == Process || t.Kind == Container {
		for len(words) > 0 && strings.Contains(words[0], "=") {
			t.Env, words = append(t.Env, words[0]), words[1:]
		}
		if len(words) == 0 {
			return Spec{}, fmt.Errorf("target %q: no command or image after its environment", s)
		}
	}
	switch t.Kind {
	case Process:
		t.Command = words
	case Container:
		if len(words) != 1 {
			return Spec{}, fmt.Errorf("target %q: one image", s)
		}
		t.Image = words[0]
	case URL:
		t.URL = strings.TrimRight(spec, "/")
	default:
		return Spec{}, fmt.Errorf("target %q: unknown kind %q", s, kind)
	}
	return t, nil
}

// String is the spec as the report shows it.
func (s Spec) String() string {
	env := ""
	for _, e := range s.Env {
		env += e + " "
	}
	switch s.Kind {
	case Process:
		return env + strings.Join(s.Command, " ")
	case Container:
		if env != "" {
			env = "-e " + strings.ReplaceAll(strings.TrimSpace(env), " ", " -e ") + " "
		}
		if id := strings.TrimPrefix(s.ImageID, "sha256:"); id != "" {
			return "docker run " + env + s.Image + " (" + id[:min(12, len(id))] + ")"
		}
		return "docker run " + env + s.Image
	default:
		return s.URL
	}
}

// Options are the settings every start shares.
type Options struct {
	Dir           string // working directory of processes (the repo root)
	ServerCPUs    []int  // nil: not pinned
	LogFile       string // processes' stdout and stderr are appended here; "" discards
	DockerNetwork string // "host" (default) or "bridge"
}

// Instance is one running server.
type Instance struct {
	Spec    Spec
	Addr    string    // host:port the server answers on
	Spawned time.Time // taken just before the spawn (exec or docker run)

	srv *launch.Server // nil for a URL target
	log *os.File
}

// BaseURL is "http://" + Addr.
func (i *Instance) BaseURL() string { return "http://" + i.Addr }

// Start spawns the target (internal/launch) and returns at once: the caller
// polls for health.
func Start(ctx context.Context, spec Spec, opt Options) (*Instance, error) {
	inst := &Instance{Spec: spec}
	ls := launch.Spec{Env: spec.Env}
	switch spec.Kind {
	case URL:
		inst.Addr = strings.TrimPrefix(strings.TrimPrefix(spec.URL, "http://"), "https://")
		return inst, nil
	case Process:
		if len(spec.Command) == 0 {
			return nil, errors.New("target: empty command")
		}
		ls.Command, ls.Dir = spec.Command, opt.Dir
		ls.StartProcess = func(cmd *exec.Cmd) error { return affinity.Start(cmd, opt.ServerCPUs) }
		if opt.LogFile != "" {
			out, err := os.OpenFile(opt.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return nil, err
			}
			inst.log, ls.Stdout, ls.Stderr = out, out, out
		}
	case Container:
		ls.Image, ls.Network = spec.Image, opt.DockerNetwork
		if spec.ImageID != "" {
			ls.Image = spec.ImageID
		}
		ls.DockerArgs = []string{"--rm"}
		if len(opt.ServerCPUs) > 0 {
			ls.DockerArgs = append(ls.DockerArgs, "--cpuset-cpus", affinity.Format(opt.ServerCPUs))
		}
	default:
		return nil, fmt.Errorf("target: unknown kind %q", spec.Kind)
	}
	srv, err := launch.Start(ctx, ls)
	if err != nil {
		inst.closeLog()
		return nil, err
	}
	inst.srv, inst.Addr, inst.Spawned = srv, srv.Addr, srv.Spawned
	return inst, nil
}

// PID returns the server's process ID as seen from this machine (for a
// container, its main process); 0 for a URL target.
func (i *Instance) PID(ctx context.Context) (int, error) {
	if i.srv == nil {
		return 0, nil
	}
	return i.srv.PID(ctx)
}

// Exited reports, without blocking, whether the server is gone (a process
// exited, a container's docker run failed): a startup poll uses it to stop
// waiting for a server that is not coming.
func (i *Instance) Exited() error {
	if i.srv == nil {
		return nil
	}
	if err := i.srv.Exited(); err != nil {
		return fmt.Errorf("%s: %w (see its log)", i.Spec.Name, err)
	}
	return nil
}

// Stop ends the server: SIGTERM to its process group, SIGKILL after a grace
// period; for a container `docker rm -f`. It waits until the server is gone.
func (i *Instance) Stop() error {
	defer i.closeLog()
	if i.srv == nil {
		return nil
	}
	return i.srv.Stop(5 * time.Second)
}

func (i *Instance) closeLog() {
	if i.log != nil {
		i.log.Close()
		i.log = nil
	}
}

// Hardened is the `docker run` flags of a container run as the Kubernetes
// manifests run thumbd: read-only root filesystem, every capability
// dropped, no-new-privileges, user 65532, and the manifests' CPU and
// memory limits (memory "" or "none": no limit; swap is never added to
// the limit, as on Kubernetes).
func Hardened(cpus, memory string) []string {
	args := []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--user", "65532:65532", "--cpus", cpus}
	if memory != "" && memory != "none" {
		args = append(args, "--memory", memory, "--memory-swap", memory)
	}
	return args
}
