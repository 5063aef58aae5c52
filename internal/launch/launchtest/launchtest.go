// Package launchtest fakes what internal/launch starts, so that tools built
// on it are tested without Docker or thumbd. A test binary whose TestMain
// calls Main becomes, when its environment says so, a fake thumbd
// (ServerEnv) or a fake docker client (Docker) whose containers are fake
// thumbds.
//
// The fake thumbd listens on PORT and answers 503 to everything for its
// first 30 ms (as while libvips starts), then GET /ready and /health with
// 200 and POST /thumbnail with a 200 image/png. Modes: "exit" exits 3 at
// once, "never" is never ready, "stubborn" ignores SIGTERM, "dies" is
// killed by a signal at its 10th thumbnail, "stalls" never answers a
// thumbnail after its 10th. It exits 0 on SIGTERM, and by itself after 30 s.
// With THUMBD_ADMIN_PORT set it answers GET /health there, and no longer
// on PORT (thumbd answers on both), so that a test sees which port a
// probe asked.
package launchtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/thumbd/thumbd/internal/procfs"
)

const (
	envFake    = "LAUNCH_FAKE"
	envMode    = "LAUNCH_MODE"
	envJournal = "LAUNCH_JOURNAL"
)

// Run is a TestMain: Main, then the tests.
func Run(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// Main turns this process into a fake server or docker client when its
// environment asks for one (and exits); otherwise it returns. Call it
// first in TestMain.
func Main() {
	switch os.Getenv(envFake) {
	case "server":
		os.Exit(server(os.Getenv(envMode)))
	case "docker":
		os.Exit(docker(os.Args[1:]))
	}
}

// ServerEnv is the environment that makes this test binary a fake thumbd
// in the given mode ("" for a well-behaved one).
func ServerEnv(mode string) []string {
	return []string{envFake + "=server", envMode + "=" + mode}
}

// Docker makes this test binary the docker client of the test: it returns
// the client to give as launch.Spec.Docker and the journal where every
// docker command it runs is noted, one line each. Images: fake:missing
// cannot be run, fake:crash exits at once, fake:never is never ready, any
// other runs a well-behaved fake thumbd.
func Docker(t testing.TB) (client, journal string) {
	journal = filepath.Join(t.TempDir(), "docker-journal")
	t.Setenv(envFake, "docker")
	t.Setenv(envJournal, journal)
	return os.Args[0], journal
}

// Source writes a file to POST to the fake thumbd (which reads no image)
// and returns its path.
func Source(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "src.jpg")
	if err := os.WriteFile(path, []byte("\xff\xd8\xff not really a JPEG"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Journal returns the docker commands noted so far.
func Journal(t testing.TB, journal string) []string {
	b, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func server(mode string) int {
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
	adminPort := os.Getenv("THUMBD_ADMIN_PORT")
	if adminPort != "" {
		al, err := net.Listen("tcp", "127.0.0.1:"+adminPort)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go http.Serve(al, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/health" {
				w.WriteHeader(http.StatusNotFound)
			}
		}))
	}
	var thumbs atomic.Int64
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch {
		case mode == "never" || time.Now().Before(ready):
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Method == http.MethodPost && r.URL.Path == "/thumbnail":
			if n := thumbs.Add(1); n >= 10 && mode == "dies" {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			} else if n > 10 && mode == "stalls" {
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case r.Method == http.MethodGet && (r.URL.Path == "/ready" || r.URL.Path == "/health" && adminPort == ""):
		default:
			w.WriteHeader(http.StatusNotFound)
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

// docker implements `run -d --name N ... -e K=V ... IMAGE`, `inspect -f
// FORMAT N` (.State.Pid, .State.Status, .State.Running; anything else:
// "false"), `kill -s
// SIG N`, `rm -f N` and `logs ... N`.
func docker(args []string) int {
	journal := os.Getenv(envJournal)
	if f, err := os.OpenFile(journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
	name := args[len(args)-1]
	pid := func() int {
		b, _ := os.ReadFile(journal + "." + name)
		p, _ := strconv.Atoi(string(b))
		return p
	}
	kill := func(sig syscall.Signal) {
		if p := pid(); p > 0 { // never 0: that is the caller's own group
			syscall.Kill(p, sig)
		}
	}
	switch args[0] {
	case "run":
		return run(args, journal)
	case "inspect":
		state := procfs.State(pid())
		alive := state != "" && state != "Z"
		switch {
		case strings.Contains(args[2], ".State.Pid"):
			fmt.Println(pid())
		case strings.Contains(args[2], ".State.Status") && alive:
			fmt.Println("running")
		case strings.Contains(args[2], ".State.Status"):
			fmt.Println("exited")
		case strings.Contains(args[2], ".State.Running"):
			fmt.Println(alive)
		default:
			fmt.Println("false")
		}
	case "kill":
		sig, _ := strconv.Atoi(args[2])
		kill(syscall.Signal(sig))
	case "rm":
		kill(syscall.SIGKILL)
	case "logs":
		fmt.Println("fake container log line")
	default:
		return 2
	}
	return 0
}

func run(args []string, journal string) int {
	image := args[len(args)-1]
	if image == "fake:missing" {
		fmt.Fprintln(os.Stderr, "Unable to find image 'fake:missing' locally")
		return 125
	}
	var name string
	var env []string
	for i, a := range args[:len(args)-1] {
		switch a {
		case "--name":
			name = args[i+1]
		case "-e":
			env = append(env, args[i+1])
		}
	}
	mode := strings.TrimPrefix(image, "fake:")
	if mode == "crash" {
		mode = "exit"
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), env...), ServerEnv(mode)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// No output: like a container's, it does not go to the docker client.
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.WriteFile(journal+"."+name, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	fmt.Println("c0ffee")
	return 0
}
