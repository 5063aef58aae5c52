package launch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the server (LAUNCH_FAKE=server) and as a
// docker client (LAUNCH_FAKE=docker) whose containers are such servers.
func TestMain(m *testing.M) {
	switch os.Getenv("LAUNCH_FAKE") {
	case "server":
		os.Exit(fakeServer())
	case "docker":
		os.Exit(fakeDocker(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeServer listens on PORT; /ready answers 503 for its first 30 ms, then
// 200. LAUNCH_MODE: "exit" exits 3 at once, "never" is never ready,
// "stubborn" ignores SIGTERM. It exits 0 on SIGTERM, by itself after 30 s.
func fakeServer() int {
	mode := os.Getenv("LAUNCH_MODE")
	fmt.Fprintln(os.Stderr, "fake server starting, mode", mode)
	if mode == "exit" {
		return 3
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ready := time.Now().Add(30 * time.Millisecond)
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mode == "never" || time.Now().Before(ready) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	for {
		select {
		case <-term:
			if mode != "stubborn" {
				return 0
			}
		case <-time.After(30 * time.Second):
			return 0
		}
	}
}

// fakeDocker implements `run -d --name N ... -e K=V ... IMAGE` (the
// container is a fake server; image fake:missing fails, fake:crash exits at
// once), `inspect -f FORMAT N` (.State.Pid, .State.Status), `kill -s SIG
// N`, `rm -f N` and `logs`. It notes each command in $LAUNCH_JOURNAL.
func fakeDocker(args []string) int {
	journal := os.Getenv("LAUNCH_JOURNAL")
	note := func(s string) {
		f, err := os.OpenFile(journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
	}
	pidOf := func(name string) int {
		b, _ := os.ReadFile(journal + "." + name)
		pid, _ := strconv.Atoi(string(b))
		return pid
	}
	kill := func(name string, sig syscall.Signal) {
		if pid := pidOf(name); pid > 0 { // never 0: that is our own group
			syscall.Kill(pid, sig)
		}
	}
	note(strings.Join(args, " "))
	name := args[len(args)-1]
	switch args[0] {
	case "run":
		image := args[len(args)-1]
		if image == "fake:missing" {
			fmt.Fprintln(os.Stderr, "Unable to find image 'fake:missing' locally")
			return 125
		}
		var env []string
		for i, a := range args {
			if a == "--name" {
				name = args[i+1]
			}
			if a == "-e" {
				env = append(env, args[i+1])
			}
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), env...), "LAUNCH_FAKE=server")
		if image == "fake:crash" {
			cmd.Env = append(cmd.Env, "LAUNCH_MODE=exit")
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		// No output: like a container's, it does not go to the docker client.
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.WriteFile(journal+"."+name, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
		fmt.Println("c0ffee")
	case "inspect":
		pid := pidOf(name)
		if strings.Contains(args[2], "Pid") {
			fmt.Println(pid)
			return 0
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if f := strings.Fields(string(stat)); err != nil || len(f) < 3 || f[2] == "Z" {
			fmt.Println("exited")
		} else {
			fmt.Println("running")
		}
	case "kill":
		sig, _ := strconv.Atoi(args[2])
		kill(name, syscall.Signal(sig))
	case "rm":
		kill(name, syscall.SIGKILL)
	case "logs":
		fmt.Println("fake container log line")
	default:
		return 2
	}
	return 0
}

func fakeProcess(mode string, out *Log) Spec {
	s := Spec{Command: []string{os.Args[0]}, Env: []string{"LAUNCH_FAKE=server", "LAUNCH_MODE=" + mode}}
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
	err = srv.WaitReady(ctx, 300*time.Millisecond)
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
	journal := filepath.Join(t.TempDir(), "journal")
	t.Setenv("LAUNCH_FAKE", "docker")
	t.Setenv("LAUNCH_JOURNAL", journal)
	return Spec{Image: image, Docker: os.Args[0], Network: "bridge", Env: []string{"THUMBD_QUEUE=8"},
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
	b, _ := os.ReadFile(journal)
	want := fmt.Sprintf("run -d --name %s -p 127.0.0.1:%d:%d -e PORT=%d -e THUMBD_QUEUE=8 --read-only fake:ok\n",
		srv.Container, srv.Port, srv.Port, srv.Port)
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("docker run: got\n%s\nwant\n%s", b, want)
	}
	for _, cmd := range []string{"kill -s 18 " + srv.Container, "rm -f " + srv.Container} {
		if !strings.Contains(string(b), cmd+"\n") {
			t.Errorf("journal lacks %q:\n%s", cmd, b)
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
