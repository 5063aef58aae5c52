package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/launch/launchtest"
)

func TestMain(m *testing.M) { launchtest.Run(m) }

func fakeProcess(mode string, out *Log) Spec {
	s := Spec{Command: []string{os.Args[0]}, Env: launchtest.ServerEnv(mode)}
	if out != nil {
		s.Stderr = out
	}
	return s
}

func TestProcessStartsGetsReadyAndExitsZeroOnSIGTERM(t *testing.T) {
	ctx := context.Background()
	out := &Log{}
	var started bool
	s := fakeProcess("", out)
	s.StartProcess = func(c *exec.Cmd) error { started = true; return c.Start() }
	srv, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	if err := srv.WaitReady(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !started || srv.Spawned.IsZero() || srv.Cmd == nil || srv.Addr != "127.0.0.1:"+strconv.Itoa(srv.Port) {
		t.Fatalf("%+v", srv)
	}
	if at, err := srv.Started(ctx); err != nil || at.Before(srv.Spawned) {
		t.Fatalf("started %v %v", at, err)
	}
	if pid, err := srv.PID(ctx); err != nil || pid != srv.Cmd.Process.Pid {
		t.Fatalf("pid %d %v", pid, err)
	}
	if srv.Exited() != nil {
		t.Fatal("a running server reported gone")
	}
	if err := srv.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := srv.Wait(ctx); code != 0 || err != nil {
		t.Fatalf("exit %d %v", code, err)
	}
	if srv.Exited() == nil {
		t.Fatal("an exited server reported running")
	}
	if !strings.Contains(out.String(), "fake server starting") {
		t.Fatalf("the child's stderr was not passed on: %q", out.String())
	}
	if srv.Logs() != "" {
		t.Fatal("a process has no Docker logs")
	}
	if _, err := srv.Inspect(ctx, "{{.Id}}"); err == nil {
		t.Fatal("docker inspect of a process")
	}
}

func TestWaitReadyGivesUpOnAProcessThatExits(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fakeProcess("exit", nil))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = srv.WaitReady(ctx, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited") || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	if code, err := srv.Wait(ctx); code != 3 || err != nil {
		t.Fatalf("exit %d %v, want 3", code, err)
	}
}

func TestWaitReadyTimesOutNamingTheLastAnswer(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fakeProcess("never", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	err = srv.WaitReady(ctx, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") {
		t.Fatalf("err %v, want a timeout naming the 503", err)
	}
}

func TestStopKillsAServerThatIgnoresSIGTERM(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, fakeProcess("stubborn", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if code, _ := srv.Wait(ctx); code != -1 {
		t.Fatalf("exit code %d, want -1 (killed)", code)
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	ctx := context.Background()
	for _, s := range []Spec{{}, {Command: []string{"x"}, Image: "y"}, {Image: "y", Network: "overlay"}} {
		if _, err := Start(ctx, s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if _, err := Start(ctx, Spec{Command: []string{"/no/such/thumbd"}}); err == nil || !strings.Contains(err.Error(), "/no/such/thumbd") {
		t.Errorf("missing binary: %v", err)
	}
	srv, err := Start(ctx, Spec{Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Exited(); err == nil || !strings.Contains(err.Error(), "true exited") {
		t.Errorf("exited: %v", err)
	}
}

func fakeDockerSpec(t *testing.T, image string) (Spec, string) {
	client, journal := launchtest.Docker(t)
	return Spec{Image: image, Docker: client, Network: "bridge", Env: []string{"THUMBD_QUEUE=8"},
		DockerArgs: []string{"--read-only"}}, journal
}

func TestContainerRunsWithPortEnvAndFlagsAndIsRemoved(t *testing.T) {
	ctx := context.Background()
	s, journal := fakeDockerSpec(t, "fake:ok")
	srv, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if at, err := srv.Started(ctx); err != nil || at.Before(srv.Spawned) {
		t.Fatalf("started %v %v", at, err)
	}
	pid, err := srv.PID(ctx)
	if err != nil || pid <= 0 {
		t.Fatalf("pid %d %v", pid, err)
	}
	if oom, err := srv.Inspect(ctx, "{{.State.OOMKilled}}"); err != nil || oom != "false" {
		t.Errorf("inspect: %q %v", oom, err)
	}
	if !strings.Contains(srv.Logs(), "fake container log line") {
		t.Errorf("logs %q", srv.Logs())
	}
	if err := srv.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Wait(ctx); err == nil {
		t.Error("Wait on a container: no error")
	}
	if err := srv.Stop(time.Second); err != nil {
		t.Fatal(err)
	}
	got := launchtest.Journal(t, journal)
	want := fmt.Sprintf("run -d --name %s -p 127.0.0.1:%d:%d -e PORT=%d -e THUMBD_QUEUE=8 --read-only fake:ok",
		srv.Container, srv.Port, srv.Port, srv.Port)
	if got[0] != want {
		t.Errorf("docker run: got\n%s\nwant\n%s", got[0], want)
	}
	for _, cmd := range []string{"kill -s 18 " + srv.Container, "rm -f " + srv.Container} {
		if !slices.Contains(got, cmd) {
			t.Errorf("journal lacks %q: %q", cmd, got)
		}
	}
}

func TestContainerThatCannotRunOrExitsIsReported(t *testing.T) {
	ctx := context.Background()
	s, _ := fakeDockerSpec(t, "fake:missing")
	srv, err := Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Started(ctx); err == nil || !strings.Contains(err.Error(), "Unable to find image") {
		t.Errorf("started: %v", err)
	}
	if err := srv.WaitReady(ctx, 10*time.Second); err == nil || !strings.Contains(err.Error(), "docker run") {
		t.Errorf("ready: %v", err)
	}
	if _, err := srv.PID(ctx); err == nil {
		t.Error("pid of a container that never ran")
	}
	srv.Stop(time.Second)

	s, _ = fakeDockerSpec(t, "fake:crash")
	srv, err = Start(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(time.Second)
	start := time.Now()
	err = srv.WaitReady(ctx, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited; its log:\nfake container log line") || time.Since(start) > 10*time.Second {
		t.Errorf("ready: %v after %s", err, time.Since(start))
	}
}
