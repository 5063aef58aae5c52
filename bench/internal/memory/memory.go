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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/thumbd/thumbd/bench/internal/benchlock"
	"github.com/thumbd/thumbd/bench/internal/load"
	"github.com/thumbd/thumbd/bench/internal/procmem"
	"github.com/thumbd/thumbd/bench/internal/sources"
	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/service/launch"
)

// Run is the subcommand.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var env []string
	image := fs.String("image", "", "a container image, run hardened with -cpus and -memory (else: the command after --)")
	docker := fs.String("docker", "docker", "docker client to run")
	cpus := fs.String("cpus", "2", "container --cpus")
	mem := fs.String("memory", "1280m", "container --memory (the manifests' limit)")
	fs.Func("env", "KEY=VALUE for thumbd (repeatable)", func(v string) error { env = append(env, v); return nil })
	source := fs.String("source", "bench/results/tmp/sources/large.jpg", "JPEG to POST (a known source's name is made when missing)")
	query := fs.String("query", "w=256&h=256", "thumbnail query")
	clients := fs.Int("clients", 10, "concurrent clients")
	duration := fs.Duration("duration", 15*time.Second, "load duration (the bound in time)")
	requests := fs.Int("requests", 0, "requests in all (the bound in count; 0: the load generator's own)")
	lock := fs.String("lock", benchlock.Path, "flock held while measuring (\"\" for none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench memory [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*image == "") == (fs.NArg() == 0) || *clients < 1 || *duration <= 0 || *requests < 0 {
		fs.Usage()
		return errors.New("want -image or a command, not both; -clients and -duration positive")
	}
	body, err := sources.Read(*source)
	if err != nil {
		return err
	}
	spec := launch.Spec{Command: fs.Args(), Env: env, Stdout: stderr, Stderr: stderr}
	name := strings.Join(fs.Args(), " ")
	if *image != "" {
		spec = launch.Spec{Image: *image, Docker: *docker, Network: "bridge", Env: env, DockerArgs: target.Hardened(*cpus, *mem)}
		name = *image
	}
	if *lock != "" {
		release, err := benchlock.Acquire(ctx, *lock, stderr)
		if err != nil {
			return err
		}
		defer release()
	}
	srv, err := launch.Start(ctx, spec)
	if err != nil {
		return err
	}
	defer srv.Stop(5 * time.Second)
	if err := srv.WaitReady(ctx, 30*time.Second); err != nil {
		return err
	}
	pid, err := srv.PID(ctx)
	if err != nil {
		return err
	}
	idle, err := procmem.Read(pid)
	if err != nil {
		return err
	}
	o, err := load.Run(load.Step{
		Request:     load.Request{Method: "POST", URL: srv.URL() + "/thumbnail?" + *query, Body: body, ContentType: "image/jpeg"},
		Concurrency: *clients, Duration: *duration, MaxRequests: *requests, ServerPID: pid,
	})
	if err != nil {
		return err
	}
	if err := srv.Exited(); err != nil {
		return fmt.Errorf("the server died under load: %w", err)
	}
	after, err := procmem.Read(pid)
	if err != nil {
		return err
	}
	arenas, err := procmem.Arenas(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s %s, %d clients: idle VmRSS %s, peak VmRSS %s, VmHWM %s",
		name, filepath.Base(*source), bound(o, *requests), *clients, mib(idle.VmRSS), mib(o.ServerPeakRSS), mib(after.VmHWM))
	if srv.Cmd == nil {
		fmt.Fprintf(stdout, ", cgroup peak %s, OOMKilled %s", cgroupPeak(ctx, srv), inspect(ctx, srv, "{{.State.OOMKilled}}"))
	}
	fmt.Fprintf(stdout, "; %d glibc arenas besides the main one; answers: %s\n", arenas, answers(o))
	return nil
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

// answers lists the answers by status, then the transport errors.
func answers(o load.Outcome) string {
	parts := []string{fmt.Sprintf("%d x 2xx", o.OK)}
	var codes []string
	for c := range o.Non2xx {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d x %s", o.Non2xx[c], c))
	}
	for msg, n := range o.Errors {
		parts = append(parts, fmt.Sprintf("%d x error %q", n, msg))
	}
	return strings.Join(parts, ", ")
}
