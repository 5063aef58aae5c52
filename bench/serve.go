package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/thumbd/thumbd/bench/internal/target"
	"github.com/thumbd/thumbd/internal/launch"
)

// runServe is `bench serve`: what a shell script calls to talk to a thumbd.
// It starts one (internal/launch) on a free loopback port, waits for /ready,
// runs -run with THUMBD_URL (and THUMBD_PID, THUMBD_CONTAINER) set, then
// stops the server; it fails when the command fails, when the server never
// got ready, or when it died or did not exit 0 on SIGTERM. Without -run it
// serves until interrupted.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tf target.Flags
	var dockerArgs []string
	tf.Register(fs, "run this container image instead of a command")
	network := fs.String("network", "bridge", "container networking: bridge (published on 127.0.0.1) or host")
	fs.Func("docker-arg", "a docker run flag (repeatable), e.g. -docker-arg=--read-only", appendTo(&dockerArgs))
	timeout := fs.Duration("timeout", time.Minute, "longest wait for /ready")
	grace := fs.Duration("grace", 30*time.Second, "after SIGTERM, wait this long before SIGKILL")
	logPath := fs.String("log", "", "append a process's output to this file (default: stderr)")
	runCmd := fs.String("run", "", "bash command to run once ready, with THUMBD_URL, THUMBD_PID and THUMBD_CONTAINER set")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: bench serve [flags] (-image IMAGE | -- CMD ARGS...)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := tf.Parsed(fs); err != nil {
		fs.Usage()
		return err
	}
	// The server's output and this command's lines share stderr.
	stderr = &syncWriter{w: stderr}
	spec := tf.Spec(*network, dockerArgs, nil)
	spec.Stdout, spec.Stderr = stderr, stderr
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		spec.Stdout, spec.Stderr = f, f
	}
	srv, err := launch.Start(ctx, spec)
	if err != nil {
		return err
	}
	if err := srv.WaitReady(ctx, *timeout); err != nil {
		return errors.Join(err, srv.Stop(*grace))
	}
	pid, err := srv.PID(ctx)
	if err != nil {
		return errors.Join(err, srv.Stop(*grace))
	}
	fmt.Fprintf(stderr, "serve: ready at %s (pid %d)\n", srv.URL(), pid)
	var runErr error
	if *runCmd != "" {
		runErr = runCommand(ctx, []string{"bash", "-c", *runCmd},
			[]string{"THUMBD_URL=" + srv.URL(), "THUMBD_PID=" + strconv.Itoa(pid), "THUMBD_CONTAINER=" + srv.Container}, stdout, stderr)
	} else {
		wait := make(chan struct{})
		go func() {
			for srv.Exited() == nil && ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
			}
			close(wait)
		}()
		<-wait
	}
	return errors.Join(runErr, stopServer(srv, *grace))
}

// syncWriter lets several goroutines write to one writer.
type syncWriter struct {
	sync.Mutex
	w io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) { s.Lock(); defer s.Unlock(); return s.w.Write(p) }

// appendTo is a flag.Func for a repeatable flag.
func appendTo(list *[]string) func(string) error {
	return func(v string) error { *list = append(*list, v); return nil }
}

// stopServer stops srv and says what went wrong with it: it died before
// being asked to stop, or a process did not exit 0 on SIGTERM.
func stopServer(srv *launch.Server, grace time.Duration) error {
	if err := srv.Exited(); err != nil {
		return fmt.Errorf("serve: the server died before it was stopped: %w", err)
	}
	if srv.Cmd == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		running, err := srv.Inspect(ctx, "{{.State.Running}}")
		if err == nil && running != "true" {
			err = fmt.Errorf("serve: the container stopped before it was stopped; its log:\n%s", srv.Logs())
		}
		return errors.Join(err, srv.Stop(grace))
	}
	if err := srv.Stop(grace); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if code, err := srv.Wait(ctx); err != nil || code != 0 {
		return fmt.Errorf("serve: the server exited with code %d on SIGTERM (%v)", code, err)
	}
	return nil
}
